"""The secret rules' patterns, written out by :mod:`.trigger_build` (generated: do not edit).

``python -m s3spill.context.secrets.trigger_build`` writes this file again;
tests/context/secrets/test_trigger_patterns.py checks that it holds what the builder builds.
What each pattern is and why: :mod:`.trigger_build`.
"""

from __future__ import annotations

__all__ = ["BASE64_ALPHABET", "PREFILTERS", "PREFILTER_PARTS", "SIEVES", "TRIGGERS"]

BASE64_ALPHABET = "A-Za-z0-9+/=_-"

TRIGGERS: dict[str, str] = {
    "private-key": "PRIVATE KEY|PuTTY-User-Key-File|Private-MAC",
    "aws-key": "A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA",
    "aws-secret": "(?i:aws)",
    "artifactory-credentials": "AKC[a-zA-Z0-9]{10}|AP[0-9A-F][a-zA-Z0-9]{8}",
    "azure-key": "AccountKey=",
    "url-password": "://[^\\s/@]+:[^\\s/@]+@",
    "cloudant-credentials": "(?i:cl(?:ou|oudant)?[_-]?(?:api)?[_-]?(?:key|pwd|pw|pass|token)|cloudant)",
    "discord-bot-token": "\\.[a-zA-Z0-9_-]{6}\\.[a-zA-Z0-9_-]{8}",
    "github-token": "gh[pousr]_",
    "gitlab-token": "gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-|GR1348941",
    "ibm-cos-hmac-credentials": "(?i:secret[_-]?(?:access)?[_-]?key)",
    "ibm-cloud-iam-key": ("(?i:key|pwd|pass|token)(?i:word)?[\\\"']?\\]? *(?:[=:]|:=|=>|::)? *[\\\"']?[a-zA-"
     "Z0-9_-]{44}"),
    "jwt": "eyJ[A-Za-z0-9_=-]+\\.",
    "mailchimp-access-key": "-us[0-9]",
    "npm-token": "_authToken",
    "openai-token": "T3BlbkFJ",
    "pypi-token": "pypi-AgE",
    "sendgrid-api-key": "SG\\.",
    "slack-token": "(?i:xox[abposr]-|hooks\\.slack\\.com)",
    "softlayer-credentials": "(?i:softlayer|sl[_-]?(?:api)?[_-]?(?:key|pwd|pass|token))",
    "square-secret": "sq0csp-",
    "stripe-access-key": "k_live_",
    "telegram-bot-token": "[0-9]{8}:[0-9A-Za-z_-]{8}",
    "twilio-api-key": "(?:AC|SK)[a-z0-9]{12}",
    "password": ("(?i:(?:api|auth|service|account|db|database|priv|private|client)_?key|(?:db|"
     "database|key)_?pass|passw(?:or)?d|pwd|secret|contrase)[A-Za-z0-9_\\x80-\\xff]*"
     "[\\]'\\\"]{0,2}(?::|[\\t-\\r\\x1c-\\x20\\x80-\\xff]*(?:={1,3}|!==?))[\\t-\\r\\x1c-\\x20\\x"
     "80-\\xff]*['\\\"`]?[A-Za-z0-9_\\x80-\\xff]|(?i:(?:api|auth|service|account|db|dat"
     "abase|priv|private|client)_?key|(?:db|database|key)_?pass|passw(?:or)?d|pwd|"
     "secret|contrase)[^\\t-\\r\\x1c-\\x20]*[\\t-\\r\\x1c-\\x20\\x80-\\xff]*['\\\"`][A-Za-z0-9"
     "_\\x80-\\xff][^\\n]*['\\\"`];|[=!][=!][\\t-\\r\\x1c-\\x20\\x80-\\xff]*[A-Za-z0-9_\\x80-\\"
     "xff]*(?i:(?:api|auth|service|account|db|database|priv|private|client)_?key|("
     "?:db|database|key)_?pass|passw(?:or)?d|pwd|secret|contrase)"),
    "high-entropy": ("[A-Za-z0-9_.-]{3}[\\\"']?[ \\t]*[:=][ \\t]*[\\\"'`]?(?:[G-LN-RT-Zg-ln-rt-z+/][A-Za"
     "-z0-9+/=_-]{22}|[A-Fa-f0-9=_-]{1}[G-Zg-z+/][A-Za-z0-9+/=_-]{21}|[A-Fa-f0-9=_"
     "-]{2}[G-Zg-z+/][A-Za-z0-9+/=_-]{20}|[A-Fa-f0-9=_-]{3}[G-Zg-z+/][A-Za-z0-9+/="
     "_-]{19}|[A-Fa-f0-9=_-]{4}[G-Zg-z+/][A-Za-z0-9+/=_-]{18}|[A-Fa-f0-9=_-]{5}[G-"
     "Zg-z+/][A-Za-z0-9+/=_-]{17}|[A-Fa-f0-9=_-]{6}[G-Zg-z+/][A-Za-z0-9+/=_-]{16}|"
     "[A-Fa-f0-9=_-]{7}[G-Zg-z+/][A-Za-z0-9+/=_-]{15}|[A-Fa-f0-9=_-]{8}[G-Zg-z+/]["
     "A-Za-z0-9+/=_-]{14}|[A-Fa-f0-9=_-]{9}[G-Zg-z+/][A-Za-z0-9+/=_-]{13}|[A-Fa-f0"
     "-9=_-]{10}[G-Zg-z+/][A-Za-z0-9+/=_-]{12}|[A-Fa-f0-9=_-]{11}[G-Zg-z+/][A-Za-z"
     "0-9+/=_-]{11}|[A-Fa-f0-9=_-]{12}[G-Zg-z+/][A-Za-z0-9+/=_-]{10}|[A-Fa-f0-9=_-"
     "]{13}[G-Zg-z+/][A-Za-z0-9+/=_-]{9}|[A-Fa-f0-9=_-]{14}[G-Zg-z+/][A-Za-z0-9+/="
     "_-]{8}|[A-Fa-f0-9=_-]{15}[G-Zg-z+/][A-Za-z0-9+/=_-]{7}|[A-Fa-f0-9=_-]{16}[G-"
     "Zg-z+/][A-Za-z0-9+/=_-]{6}|[A-Fa-f0-9=_-]{17}[G-Zg-z+/][A-Za-z0-9+/=_-]{5}|["
     "A-Fa-f0-9=_-]{18}[G-Zg-z+/][A-Za-z0-9+/=_-]{4}|[A-Fa-f0-9=_-]{19}[G-Zg-z+/]["
     "A-Za-z0-9+/=_-]{3}|[A-Fa-f0-9=_-]{20}[G-Zg-z+/][A-Za-z0-9+/=_-]{2}|[A-Fa-f0-"
     "9=_-]{21}[G-Zg-z+/][A-Za-z0-9+/=_-]{1}|[A-Fa-f0-9=_-]{22,}[G-Zg-z+/]|[Mm][A-"
     "CE-Za-ce-z0-9+/=_-][A-Za-z0-9+/=_-]{21}|[Mm][Dd][A-Za-z0-46-9+/=_-][A-Za-z0-"
     "9+/=_-]{20}|[Mm][Dd]5[A-Za-z0-9+/=_][A-Za-z0-9+/=_-]{19}|[Ss][A-GI-Za-gi-z0-"
     "9+/=_-][A-Za-z0-9+/=_-]{21}|[Ss][Hh][B-Zb-z0-9+/=_-][A-Za-z0-9+/=_-]{20}|[Ss"
     "][Hh][Aa][A-Za-z046-9+/=_-][A-Za-z0-9+/=_-]{19}|[Ss][Hh][Aa]1[A-Za-z0-9+/=]["
     "A-Za-z0-9+/=_-]{18}|[Ss][Hh][Aa]2[A-Za-z01346-9+/=_-][A-Za-z0-9+/=_-]{18}|[S"
     "s][Hh][Aa]22[A-Za-z0-35-9+/=_-][A-Za-z0-9+/=_-]{17}|[Ss][Hh][Aa]224[A-Za-z0-"
     "9+/=][A-Za-z0-9+/=_-]{16}|[Ss][Hh][Aa]25[A-Za-z0-57-9+/=_-][A-Za-z0-9+/=_-]{"
     "17}|[Ss][Hh][Aa]256[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{16}|[Ss][Hh][Aa]3[A-Za-z0-"
     "79+/=_-][A-Za-z0-9+/=_-]{18}|[Ss][Hh][Aa]38[A-Za-z0-35-9+/=_-][A-Za-z0-9+/=_"
     "-]{17}|[Ss][Hh][Aa]384[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{16}|[Ss][Hh][Aa]5[A-Za-"
     "z02-9+/=_-][A-Za-z0-9+/=_-]{18}|[Ss][Hh][Aa]51[A-Za-z013-9+/=_-][A-Za-z0-9+/"
     "=_-]{17}|[Ss][Hh][Aa]512[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{16}|[0-9]*[a-f][0-9a-"
     "f]*[A-F][0-9a-fA-F]*[=_\\-]|[0-9]*[a-f][0-9a-f]*[=_\\-][0-9a-f=_\\-]*[A-F]|[0-9"
     "]*[A-F][0-9A-F]*[a-f][0-9A-Fa-f]*[=_\\-]|[0-9]*[A-F][0-9A-F]*[=_\\-][0-9A-F=_\\"
     "-]*[a-f]|[0-9]*[=_\\-][0-9=_\\-]*[a-f][0-9=_\\-a-f]*[A-F]|[0-9]*[=_\\-][0-9=_\\-]"
     "*[A-F][0-9=_\\-A-F]*[a-f])|(?i:token|secret|passw|api_?key|private|credential"
     "|auth)[A-Za-z0-9_.-]*[\\\"']?[ \\t]*[:=][ \\t]*[\\\"'`]?(?:[G-LN-RT-Zg-ln-rt-z+/]["
     "A-Za-z0-9+/=_-]{19}|[A-Fa-f0-9=_-]{1}[G-Zg-z+/][A-Za-z0-9+/=_-]{18}|[A-Fa-f0"
     "-9=_-]{2}[G-Zg-z+/][A-Za-z0-9+/=_-]{17}|[A-Fa-f0-9=_-]{3}[G-Zg-z+/][A-Za-z0-"
     "9+/=_-]{16}|[A-Fa-f0-9=_-]{4}[G-Zg-z+/][A-Za-z0-9+/=_-]{15}|[A-Fa-f0-9=_-]{5"
     "}[G-Zg-z+/][A-Za-z0-9+/=_-]{14}|[A-Fa-f0-9=_-]{6}[G-Zg-z+/][A-Za-z0-9+/=_-]{"
     "13}|[A-Fa-f0-9=_-]{7}[G-Zg-z+/][A-Za-z0-9+/=_-]{12}|[A-Fa-f0-9=_-]{8}[G-Zg-z"
     "+/][A-Za-z0-9+/=_-]{11}|[A-Fa-f0-9=_-]{9}[G-Zg-z+/][A-Za-z0-9+/=_-]{10}|[A-F"
     "a-f0-9=_-]{10}[G-Zg-z+/][A-Za-z0-9+/=_-]{9}|[A-Fa-f0-9=_-]{11}[G-Zg-z+/][A-Z"
     "a-z0-9+/=_-]{8}|[A-Fa-f0-9=_-]{12}[G-Zg-z+/][A-Za-z0-9+/=_-]{7}|[A-Fa-f0-9=_"
     "-]{13}[G-Zg-z+/][A-Za-z0-9+/=_-]{6}|[A-Fa-f0-9=_-]{14}[G-Zg-z+/][A-Za-z0-9+/"
     "=_-]{5}|[A-Fa-f0-9=_-]{15}[G-Zg-z+/][A-Za-z0-9+/=_-]{4}|[A-Fa-f0-9=_-]{16}[G"
     "-Zg-z+/][A-Za-z0-9+/=_-]{3}|[A-Fa-f0-9=_-]{17}[G-Zg-z+/][A-Za-z0-9+/=_-]{2}|"
     "[A-Fa-f0-9=_-]{18}[G-Zg-z+/][A-Za-z0-9+/=_-]{1}|[A-Fa-f0-9=_-]{19,}[G-Zg-z+/"
     "]|[Mm][A-CE-Za-ce-z0-9+/=_-][A-Za-z0-9+/=_-]{18}|[Mm][Dd][A-Za-z0-46-9+/=_-]"
     "[A-Za-z0-9+/=_-]{17}|[Mm][Dd]5[A-Za-z0-9+/=_][A-Za-z0-9+/=_-]{16}|[Ss][A-GI-"
     "Za-gi-z0-9+/=_-][A-Za-z0-9+/=_-]{18}|[Ss][Hh][B-Zb-z0-9+/=_-][A-Za-z0-9+/=_-"
     "]{17}|[Ss][Hh][Aa][A-Za-z046-9+/=_-][A-Za-z0-9+/=_-]{16}|[Ss][Hh][Aa]1[A-Za-"
     "z0-9+/=][A-Za-z0-9+/=_-]{15}|[Ss][Hh][Aa]2[A-Za-z01346-9+/=_-][A-Za-z0-9+/=_"
     "-]{15}|[Ss][Hh][Aa]22[A-Za-z0-35-9+/=_-][A-Za-z0-9+/=_-]{14}|[Ss][Hh][Aa]224"
     "[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{13}|[Ss][Hh][Aa]25[A-Za-z0-57-9+/=_-][A-Za-z0"
     "-9+/=_-]{14}|[Ss][Hh][Aa]256[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{13}|[Ss][Hh][Aa]3"
     "[A-Za-z0-79+/=_-][A-Za-z0-9+/=_-]{15}|[Ss][Hh][Aa]38[A-Za-z0-35-9+/=_-][A-Za"
     "-z0-9+/=_-]{14}|[Ss][Hh][Aa]384[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{13}|[Ss][Hh][A"
     "a]5[A-Za-z02-9+/=_-][A-Za-z0-9+/=_-]{15}|[Ss][Hh][Aa]51[A-Za-z013-9+/=_-][A-"
     "Za-z0-9+/=_-]{14}|[Ss][Hh][Aa]512[A-Za-z0-9+/=][A-Za-z0-9+/=_-]{13})"),
}

PREFILTERS: dict[str, str] = {
    "high-entropy": ("(?:(?:[A-Za-z0-9_.-]{3}|[\\\"' \\t])[:=][ \\t]*[\\\"'`]?(?:(?:[G-Zg-rt-z+/]|s[A-Za"
     "-gi-z0-9+/=_-]|sh[A-Zb-z0-9+/=_-]|sha(?:[A-Za-z046-9+/=_-]|1[A-Za-z0-9+/=]|2"
     "[A-Za-z01346-9+/=_-]|22[A-Za-z0-35-9+/=_-]|224[A-Za-z0-9+/=]|25[A-Za-z0-57-9"
     "+/=_-]|256[A-Za-z0-9+/=]|3[A-Za-z0-79+/=_-]|38[A-Za-z0-35-9+/=_-]|384[A-Za-z"
     "0-9+/=]|5[A-Za-z02-9+/=_-]|51[A-Za-z013-9+/=_-]|512[A-Za-z0-9+/=]))[A-Za-z0-"
     "9+/=_-]{12}|[A-Fa-f0-9=_-]{1,7}[G-Zg-z+/][A-Za-z0-9+/=_-]{12}|[A-Fa-f0-9=_-]"
     "{8,}[G-Zg-z+/]))|(?:[:=][ \\t]*[\\\"'`]?(?:[0-9]*[a-f][0-9a-f]*[A-F][0-9a-fA-F]"
     "*[=_\\-]|[0-9]*[a-f][0-9a-f]*[=_\\-][0-9a-f=_\\-]*[A-F]|[0-9]*[A-F][0-9A-F]*[a-"
     "f][0-9A-Fa-f]*[=_\\-]|[0-9]*[A-F][0-9A-F]*[=_\\-][0-9A-F=_\\-]*[a-f]|[0-9]*[=_\\"
     "-][0-9=_\\-]*[a-f][0-9=_\\-a-f]*[A-F]|[0-9]*[=_\\-][0-9=_\\-]*[A-F][0-9=_\\-A-F]*"
     "[a-f]))"),
    "password": ("(?i:(?:api|auth|service|account|db|database|priv|private|client)_?key|(?:db|"
     "database|key)_?pass|passw(?:or)?d|pwd|secret|contrase)"),
}

SIEVES: dict[str, str] = {
    "high-entropy": ("[:=][ \\t]*[\\\"'`]?(?:[A-Za-z0-9+/=_-]{23}|[0-9=_-]*(?:[a-f][0-9a-f=_-]*[A-F]|"
     "[A-F][0-9A-F=_-]*[a-f]))|(?i:token|secret|passw|api_?key|private|credential|"
     "auth)[A-Za-z0-9_.-]*[\"']?[ \t]*[:=][ \\t]*[\\\"'`]?[A-Za-z0-9+/=_-]{20}"),
}

PREFILTER_PARTS: dict[str, tuple[str, ...]] = {
    "high-entropy": (
        ("(?:[A-Za-z0-9_.-]{3}|[\\\"' \\t])[:=][ \\t]*[\\\"'`]?(?:(?:[G-Zg-rt-z+/]|s[A-Za-gi"
         "-z0-9+/=_-]|sh[A-Zb-z0-9+/=_-]|sha(?:[A-Za-z046-9+/=_-]|1[A-Za-z0-9+/=]|2[A-"
         "Za-z01346-9+/=_-]|22[A-Za-z0-35-9+/=_-]|224[A-Za-z0-9+/=]|25[A-Za-z0-57-9+/="
         "_-]|256[A-Za-z0-9+/=]|3[A-Za-z0-79+/=_-]|38[A-Za-z0-35-9+/=_-]|384[A-Za-z0-9"
         "+/=]|5[A-Za-z02-9+/=_-]|51[A-Za-z013-9+/=_-]|512[A-Za-z0-9+/=]))[A-Za-z0-9+/"
         "=_-]{12}|[A-Fa-f0-9=_-]{1,7}[G-Zg-z+/][A-Za-z0-9+/=_-]{12}|[A-Fa-f0-9=_-]{8,"
         "}[G-Zg-z+/])"),
        ("[:=][ \\t]*[\\\"'`]?(?:[0-9]*[a-f][0-9a-f]*[A-F][0-9a-fA-F]*[=_\\-]|[0-9]*[a-f]["
         "0-9a-f]*[=_\\-][0-9a-f=_\\-]*[A-F]|[0-9]*[A-F][0-9A-F]*[a-f][0-9A-Fa-f]*[=_\\-]"
         "|[0-9]*[A-F][0-9A-F]*[=_\\-][0-9A-F=_\\-]*[a-f]|[0-9]*[=_\\-][0-9=_\\-]*[a-f][0-"
         "9=_\\-a-f]*[A-F]|[0-9]*[=_\\-][0-9=_\\-]*[A-F][0-9=_\\-A-F]*[a-f])"),
    ),
}
