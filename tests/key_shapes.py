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
