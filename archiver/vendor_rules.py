"""Built-in rules for the key shapes of cloud and package services, and signed-URL signatures.

The shapes come from maintained scanners' rule sets, read and rewritten for JSON text:
gitleaks' ``config/gitleaks.toml`` (github.com/gitleaks/gitleaks, commit b58d3f1, rules
``stripe-access-token``, ``gcp-api-key``, ``npm-access-token``, ``huggingface-*``,
``sendgrid-api-token``, ``twilio-api-key``, ``pypi-upload-token``, ``azure-ad-client-secret``,
``shopify-*``, ``digitalocean-*``, ``doppler-api-token``, ``databricks-api-token``,
``linear-api-key``, ``postman-api-token``, ``pulumi-api-token``, ``grafana-*``,
``vault-service-token``, ``planetscale-*``, ``heroku-api-key-v2``, ``age-secret-key``,
``square-access-token``, ``flyio-access-token``, ``sentry-*``, ``dynatrace-api-token``,
``new-relic-user-api-key``, ``perplexity-api-key``, ``prefect-api-token``,
``rubygems-api-token``, ``1password-service-account-token``,
``aws-amazon-bedrock-api-key-long-lived``) and Yelp's detect-secrets (``AzureStorageKeyDetector``:
``AccountKey=``; ``AzureDetector``: ``SharedAccessKey=``, ``sig=``). Stripe's webhook signing
secrets (``whsec_``) and a docker config's ``"auth"`` are in neither and are ours.

Every token rule starts at a token boundary (``archiver.redact.token_start``): not right after
an ASCII letter,
so a prefix inside a longer word (``task-force-specialist``, ``DISK…``) never fires, though a
line start (``\\n``) or a digit before it does (a token glued to another one is still taken).
"""

from __future__ import annotations

from archiver.rule import Rule

__all__ = ["signature_rules", "vendor_rules"]


# (rule name, the literal starts of its tokens, the token's pattern after the boundary)
_SHAPES: tuple[tuple[str, tuple[bytes, ...], bytes], ...] = (
    (
        "stripe",
        (b"sk_live_", b"sk_test_", b"sk_prod_", b"rk_live_", b"rk_test_", b"rk_prod_"),
        rb"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}",
    ),
    ("stripe", (b"whsec_",), rb"whsec_[A-Za-z0-9]{24,99}"),
    ("google", (b"AIza",), rb"AIza[A-Za-z0-9_\-]{35}"),
    ("npm", (b"npm_",), rb"npm_[A-Za-z0-9]{36}"),
    ("huggingface", (b"hf_", b"api_org_"), rb"(?:hf_|api_org_)[A-Za-z]{34}"),
    ("sendgrid", (b"SG.",), rb"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    ("twilio", (b"SK",), rb"SK[0-9a-fA-F]{32}(?![0-9a-fA-F])"),
    # upload tokens of pypi.org (AgEIcHlwaS5vcmc) and test.pypi.org (AgENdGVzdC5weXBpLm9yZw)
    ("pypi", (b"pypi-AgE",), rb"pypi-AgE[A-Za-z0-9_\-]{50,1000}"),
    ("shopify", (b"shpat_", b"shpca_", b"shppa_", b"shpss_"), rb"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("digitalocean", (b"dop_v1_", b"doo_v1_", b"dor_v1_"), rb"do[opr]_v1_[a-f0-9]{64}"),
    ("doppler", (b"dp.pt.",), rb"dp\.pt\.[A-Za-z0-9]{43}"),
    ("databricks", (b"dapi",), rb"dapi[a-f0-9]{32}(?:-\d)?"),
    ("linear", (b"lin_api_",), rb"lin_api_[A-Za-z0-9]{40}"),
    ("postman", (b"PMAK-",), rb"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    ("pulumi", (b"pul-",), rb"pul-[a-f0-9]{40}"),
    (
        "grafana",
        (b"glsa_", b"glc_"),
        rb"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3})",
    ),
    ("vault", (b"hvs.", b"hvb."), rb"hv[sb]\.[A-Za-z0-9_\-]{90,250}"),
    ("planetscale", (b"pscale_",), rb"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_=.\-]{32,64}"),
    ("heroku", (b"HRKU-AA",), rb"HRKU-AA[0-9a-zA-Z_\-]{58}"),
    ("age", (b"AGE-SECRET-KEY-1",), rb"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("square", (b"EAAA", b"sq0atp-", b"sq0csp-"), rb"(?:EAAA|sq0atp-|sq0csp-)[A-Za-z0-9_\-]{22,60}"),
    (
        "flyio",
        (b"fo1_", b"fm1a_", b"fm1r_", b"fm2_"),
        rb"(?:fo1_[A-Za-z0-9_\-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,}={0,3})",
    ),
    ("sentry", (b"sntrys_", b"sntryu_"), rb"(?:sntrys_eyJ[A-Za-z0-9+/=_]{60,500}|sntryu_[a-f0-9]{64})"),
    ("dynatrace", (b"dt0c01.",), rb"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("newrelic", (b"NRAK-",), rb"NRAK-[A-Z0-9]{27}"),
    ("perplexity", (b"pplx-",), rb"pplx-[A-Za-z0-9]{48}"),
    ("prefect", (b"pnu_",), rb"pnu_[A-Za-z0-9]{36}"),
    ("rubygems", (b"rubygems_",), rb"rubygems_[a-f0-9]{48}"),
    ("onepassword", (b"ops_eyJ",), rb"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}"),
    ("aws", (b"ABSK",), rb"ABSK[A-Za-z0-9+/]{109,269}={0,2}"),
    # gitleaks' azure-ad-client-secret: three characters, a digit, `Q~`, then the rest
    ("azure", (), rb"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
)


# the client secret has no literal start: it starts after none of its own characters, and its
# pattern runs only in long runs of them, found by a byte translation (``scanner.class_runs``)
_AZURE_START = rb"(?:(?<![A-Za-z0-9_~.])|(?<=\\[ntr]))"
_AZURE_REGIONS = rb"[A-Za-z0-9_~.\-]{37,}"
# a connection string's key: only the value goes, `AccountKey=` stays readable
_CONNECTION_KEY = rb"(?:Account|SharedAccess)Key=([A-Za-z0-9+/]{20,}={0,2})"
_SIGNATURE = rb"[?&](?:sig|X-Amz-Signature|X-Goog-Signature|Signature)=([A-Za-z0-9%+/=_.~\-]{16,2000})"
_SIGNATURE_KEYS = (b"sig", b"X-Amz-Signature", b"X-Goog-Signature", b"Signature")
_DOCKER_VALUE = rb"([A-Za-z0-9+/]{12,}={0,2})"


def vendor_rules() -> list[Rule]:
    """One rule per key shape, each anchored on its literal starts (one scan for them all)."""
    out = []
    for name, anchors, pattern in _SHAPES:
        if anchors:
            out.append(Rule(name, pattern, 0, False, anchors, boundary=True))
        else:
            out.append(Rule(name, _AZURE_START + pattern, 0, False, (), None, _AZURE_REGIONS))
    out.append(Rule("azure", _CONNECTION_KEY, 1, False, (b"AccountKey=", b"SharedAccessKey=")))
    return out


def signature_rules(quote: bytes) -> list[Rule]:
    """The signature of a pre-signed URL (Azure SAS ``sig=``, S3 ``X-Amz-Signature=``, GCS
    ``X-Goog-Signature=``, CloudFront and S3 v2 ``Signature=``): only the value is replaced,
    the URL stays readable. A docker config's ``"auth": "<base64 of user:password>"``."""
    anchors = tuple(sep + k + b"=" for sep in (b"?", b"&") for k in _SIGNATURE_KEYS)
    docker = rb"auth(?<=\"auth)" + quote + rb" {0,3}: {0,3}" + quote + _DOCKER_VALUE + b"(?=" + quote + b")"
    return [
        Rule("signature", _SIGNATURE, 1, False, anchors),
        Rule("docker_auth", docker, 1, False, (b"auth",)),
    ]
