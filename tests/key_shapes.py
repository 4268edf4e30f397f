"""Fake keys in the shapes of the services' own (one per built-in vendor rule), for the tests
that check each shape is caught and each place it must not survive."""

from __future__ import annotations

__all__ = ["DOCKER_AUTH", "SHAPES", "SIGNED_URLS", "all_planted", "every_key", "planted"]

# (the rule that names it, the key; every key is fake: no service ever issued it)
SHAPES: dict[str, tuple[str, str]] = {
    "stripe_live": ("stripe", "sk_live_51FAKEfakeFAKEfake0123456789abcdefXYZ"),
    "stripe_restricted": ("stripe", "rk_live_51FAKEfakeFAKEfake0123456789abcdefXYZ"),
    "stripe_test": ("stripe", "sk_test_4eFAKEfakeFAKEfake0123456789"),
    "stripe_webhook": ("stripe", "whsec_FAKEfakeFAKEfake0123456789abcdef"),
    "google": ("google", "AIzaSyFAKEfakeFAKEfake0123456789-_abcde"),
    "npm": ("npm", "npm_FAKEfakeFAKEfake0123456789abcdefABCD"),
    "huggingface": ("huggingface", "hf_FAKEfakeFAKEfakeFAKEfakeFAKEfakeFA"),
    "sendgrid": ("sendgrid", "SG.FAKEfake0123456789abcd.FAKEfakeFAKEfake0123456789abcdefFAKEfake012"),
    "twilio": ("twilio", "SK0123456789abcdef0123456789abcdef"),
    "pypi": ("pypi", "pypi-AgEIcHlwaS5vcmcCJGFAKEfakeFAKEfake0123456789abcdefFAKEfake0123456789"),
    "azure_storage": (
        "azure",
        "FAKEfakeFAKEfake0123456789FAKEfakeFAKEfake0123456789FAKEfakeFAKEfake0123456789FAKEfake12==",
    ),
    "azure_client": ("azure", "abc8Q~FAKEfakeFAKEfake0123456789_abcd"),
    "shopify": ("shopify", "shpat_0123456789abcdef0123456789abcdef"),
    "digitalocean": ("digitalocean", "dop_v1_" + "0123456789abcdef" * 4),
    "linear": ("linear", "lin_api_FAKEfakeFAKEfake0123456789abcdefABCDEFGH"),
    "pulumi": ("pulumi", "pul-0123456789abcdef0123456789abcdef01234567"),
    "vault": ("vault", "hvs." + "FAKEfake0123456789" * 6),
    "age": ("age", "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE"),
    "perplexity": ("perplexity", "pplx-FAKEfakeFAKEfake0123456789abcdefFAKEfake01234567"),
    "doppler": ("doppler", "dp.pt." + ("FAKEfake0123456789" * 3)[:43]),
    "databricks": ("databricks", "dapi" + "0123456789abcdef" * 2),
    "postman": ("postman", "PMAK-" + ("0123456789abcdef" * 2)[:24] + "-" + ("0123456789abcdef" * 3)[:34]),
    "grafana": ("grafana", "glsa_" + ("FAKEfake0123456789" * 2)[:32] + "_0123abcd"),
    "planetscale": ("planetscale", "pscale_pw_" + ("FAKEfake0123456789" * 3)[:40]),
    "heroku": ("heroku", "HRKU-AA" + ("FAKEfake0123456789" * 4)[:58]),
    "square": ("square", "sq0atp-" + ("FAKEfake0123456789" * 2)[:30]),
    "flyio": ("flyio", "fo1_" + ("FAKEfake0123456789" * 3)[:43]),
    "sentry": ("sentry", "sntryu_" + "0123456789abcdef" * 4),
    "dynatrace": (
        "dynatrace",
        "dt0c01." + ("FAKEfake0123456789" * 2)[:24] + "." + ("FAKEfake0123456789" * 4)[:64],
    ),
    "newrelic": ("newrelic", "NRAK-" + ("FAKE0123456789" * 2)[:27]),
    "prefect": ("prefect", "pnu_" + ("FAKEfake0123456789" * 2)[:36]),
    "rubygems": ("rubygems", "rubygems_" + ("0123456789abcdef" * 3)[:48]),
    "onepassword": ("onepassword", "ops_eyJ" + ("FAKEfake0123456789+/" * 13)[:260]),
    "bedrock": ("aws", "ABSK" + ("FAKEfake0123456789+/" * 6)[:120]),
}
# where a key needs the text around it: (text, the key)
CONTEXT = {
    "azure_storage": (
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net"
    ),
    "docker_auth": '{{"auths": {{"ghcr.io": {{"auth": "{}"}}}}}}',
}
DOCKER_AUTH = "ZmFrZS11c2VyOmZha2UtcGFzc3dvcmQtMDEyMw=="  # base64 of fake-user:fake-password-0123
# pre-signed URLs: (url, the signature, what stays readable)
SIGNED_URLS = [
    (
        "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-12-31T00%3A00%3A00Z&sr=b&sp=r"
        "&sig=FAKEfake0123456789%2BFAKEfake%2Fabcdef%3D",
        "FAKEfake0123456789%2BFAKEfake%2Fabcdef%3D",
        "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-12-31T00%3A00%3A00Z&sr=b&sp=r&sig=",
    ),
    (
        "https://bucket.s3.amazonaws.com/key.tgz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261201T000000Z"
        "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" + "0123456789abcdef" * 4,
        "0123456789abcdef" * 4,
        "https://bucket.s3.amazonaws.com/key.tgz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20261201T000000Z",
    ),
    (
        "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature="
        + "fedcba98" * 8,
        "fedcba98" * 8,
        "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=",
    ),
    (
        "https://d111111abcdef8.cloudfront.net/image.jpg?Expires=1767225600"
        "&Signature=FAKEfake~0123456789-FAKEfake_abcdef&Key-Pair-Id=K2JCJMDEHXQW5F",
        "FAKEfake~0123456789-FAKEfake_abcdef",
        "&Key-Pair-Id=K2JCJMDEHXQW5F",
    ),
]


def planted(name: str) -> str:
    """The shape's key in the text it is found in."""
    if name == "docker_auth":
        return CONTEXT[name].format(DOCKER_AUTH)
    return CONTEXT.get(name, "{}").format(SHAPES[name][1])


def every_key() -> list[str]:
    return [s for _, s in SHAPES.values()] + [DOCKER_AUTH]


def all_planted() -> str:
    return " ; ".join(
        [planted(n) for n in SHAPES] + [planted("docker_auth")] + [u for u, _, _ in SIGNED_URLS]
    )


# --- the edges of each shape: its shortest key, one a character shorter, every character ----

_ALNUM = "Fa0Kk1Ee2Zz9"
_HEX = "aF0bE1cD2fA9"


def _key(prefix: str, n: int, first: str = "", base: str = _ALNUM, tail: str = "") -> str:
    """``prefix``, then ``n`` characters (``first``, then ``base`` over and over), then ``tail``."""
    return prefix + (first + base * (n // len(base) + 2))[:n] + tail


def _azure(n: int, lead: str = "_~.") -> str:
    return _key(lead + "8Q~", n, "_~.-")


# (rule, a key at the shortest length its service issues, using each character its body may
# hold: found whole) -- the lengths and characters as gitleaks' and detect-secrets' rules say
SHORTEST: list[tuple[str, str]] = [
    ("stripe", _key("sk_live_", 10)),
    ("stripe", _key("whsec_", 24)),
    ("google", _key("AIza", 35, "_-")),
    ("huggingface", _key("hf_", 34, base="AaBbZz")),
    ("sendgrid", _key("SG.", 16, "_-") + "." + _key("", 16, "-_")),
    ("twilio", _key("SK", 32, base=_HEX)),
    ("pypi", _key("pypi-AgE", 50, "_-")),
    ("shopify", _key("shpat_", 32, base=_HEX)),
    ("postman", _key("PMAK-", 24, base=_HEX) + "-" + _key("", 34, base=_HEX)),
    ("grafana", _key("glsa_", 32) + "_" + _key("", 8, base=_HEX)),
    ("grafana", _key("glc_", 32, "+/")),
    ("vault", _key("hvs.", 90, "_-")),
    ("planetscale", _key("pscale_pw_", 32, "_=.-")),
    ("heroku", _key("HRKU-AA", 58, "_-")),
    ("square", _key("sq0atp-", 22, "_-")),
    ("flyio", _key("fo1_", 43, "_-")),
    ("flyio", _key("fm1a_", 100, "+/")),
    ("flyio", _key("fm1r_", 100, "/+")),
    ("flyio", _key("fm2_", 100, "+/", tail="==")),
    ("sentry", _key("sntrys_eyJ", 60, "+/=_")),
    ("newrelic", _key("NRAK-", 27, base="A0Z9")),
    ("onepassword", _key("ops_eyJ", 250, "+/")),
    ("aws", _key("ABSK", 109, "+/")),
    ("azure", _azure(31)),
    ("azure", _azure(31, "A0z")),
]
# (rule, text, what must be redacted of it): keys found only by what stands around them
SHORTEST_IN_CONTEXT: list[tuple[str, str, str]] = [
    ("azure", "AccountKey={};x", _key("", 20, "+/")),
    ("signature", "https://h/p?a=b&sig={}&c=d", _key("", 16, "%+/=_.~-")),
    ("signature", "https://h/p?X-Amz-Signature={}", _key("", 16, "/.")),
    ("docker_auth", '{{"auth": "{}"}}', _key("", 12, "+/")),
]
# (rule, text): one character short of the shortest, or one too many: never that rule's
TOO_SHORT: list[tuple[str, str]] = [
    ("stripe", _key("sk_live_", 9)),
    ("stripe", _key("whsec_", 23)),
    ("sendgrid", _key("SG.", 15) + "." + _key("", 16)),
    ("sendgrid", _key("SG.", 16) + "." + _key("", 15)),
    ("pypi", _key("pypi-AgE", 49)),
    ("linear", _key("lin_api_", 39)),
    ("grafana", _key("glc_", 31)),
    ("vault", _key("hvs.", 89)),
    ("planetscale", _key("pscale_pw_", 31)),
    ("square", _key("sq0atp-", 21)),
    ("flyio", _key("fm2_", 99)),
    ("sentry", _key("sntrys_eyJ", 59)),
    ("onepassword", _key("ops_eyJ", 249)),
    ("aws", _key("ABSK", 108)),
    ("azure", _azure(30)),
    ("azure", "AccountKey=" + _key("", 19) + ";x"),
    ("signature", "https://h/p?a=b&sig=" + _key("", 15) + "&c=d"),
    ("docker_auth", '{"auth": "' + _key("", 11) + '"}'),
    # a body running on past the shape's last character is another token, not this key
    *[("twilio", _key("SK", 32, base=_HEX) + c) for c in "0fF"],
    *[("azure", _azure(34) + c) for c in "Aa0_~.-"],
]
