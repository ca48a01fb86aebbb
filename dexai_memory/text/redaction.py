"""Keeping private text and secrets out of memory.

:func:`redact` runs on every text before it enters our files or a model:

* everything inside ``<private>...</private>`` is dropped (an unclosed
  ``<private>`` drops the rest of the text);
* secrets are replaced by ``[redacted]``, the label kept so the sentence still reads:

  - keys and tokens of a known shape: Anthropic, OpenAI, AWS, GitHub, GitLab, Slack,
    Stripe, Google, Hugging Face, npm, PyPI, Docker Hub, Vault, SendGrid, Twilio,
    Telegram, Shopify, DigitalOcean and more (:data:`_SECRETS`), JWTs, private key
    blocks (PEM, OpenSSH, PGP; also inside JSON such as a service-account file), password
    hashes, Slack and Discord webhook URLs, and long high-entropy tokens;
  - numbers that are secrets by their form: card numbers (a card prefix and the Luhn
    check), IBANs (the mod-97 check), US social security numbers;
  - labelled values: ``password: ...``, ``api_key=...``, ``"client_secret": "..."``,
    any ``*_PASSWORD`` / ``*_SECRET`` / ``*_TOKEN`` / ``*_API_KEY`` / ``*_PASS``
    assignment, connection strings (``Password=...;``, ``AccountKey=...;``), the
    password of a URL, URL parameters (``?token=``, ``&sig=``);
  - headers: ``Authorization: Basic|Bearer|Token|Digest ...``, ``Proxy-Authorization``,
    ``Cookie``, ``X-Api-Key`` / ``X-Auth-Token`` and the like;
  - command lines: ``--password``/``--token``/``--api-key``/``--secret`` flags,
    ``mysql -pX``, ``sshpass -p X``, ``curl -u user:X``, ``redis-cli -a X``,
    ``docker login -p X``, ``openssl -pass pass:X``, ``smbclient -U user%X``,
    ``ldapsearch -w X``; ``.netrc`` and ``.pgpass`` lines;
  - prose: "the password for the staging database is X", "the root password on the
    box is X", "my pass is X", "my bank PIN is 4321", "CVV 123", "the door code is 4455",
    "passcode: X", "secret key is X", and every word of a passphrase, seed or recovery
    phrase ("my passphrase is correct horse battery staple").

Ordinary talk about secrets stays as it is ("I forgot my password yesterday", "the
password reset flow is broken", "PIN the dependency", "token budget is 800",
``max_tokens=4096``): a value after "is" that is a common word of prose ("stored",
"wrong", "in") is no secret, a PIN is digits, and a token after "is" needs a digit or
length. :func:`redact` is idempotent: redacted text passes through unchanged.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

__all__ = ["REDACTED", "clean", "contains_secret", "redact", "redact_all"]

#: What a secret is replaced with.
REDACTED = "[redacted]"

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.I | re.S)
_STRAY_TAG = re.compile(r"</?private>", re.I)

#: Secrets recognised by their own shape, replaced whole.
_SECRETS: tuple[re.Pattern[str], ...] = (
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
               re.S),
    re.compile(r"PuTTY-User-Key-File-\d.*?Private-MAC: *[0-9a-f]+", re.S),
    re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{20,}"),                 # age
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),                  # Anthropic
    re.compile(r"\bsk-(?:proj-|svcacct-|None-|or-v1-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI, OpenRouter
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ABIA|ACCA)[0-9A-Z]{16}\b"),   # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),               # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    re.compile(r"\bgl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|soat|agent)-[A-Za-z0-9_\-]{20,}"),  # GitLab
    re.compile(r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),             # Slack
    re.compile(r"\bxapp-[A-Za-z0-9\-]{10,}"),
    re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+"),
    re.compile(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]+"),
    re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b"),      # Stripe
    re.compile(r"\bwhsec_[A-Za-z0-9+/=]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),                    # Google API key
    re.compile(r"\bya29\.[0-9A-Za-z_\-]{20,}"),                   # Google OAuth access token
    re.compile(r"\bGOCSPX-[0-9A-Za-z_\-]{20,}"),                  # Google OAuth client secret
    re.compile(r"\b1//0[0-9A-Za-z_\-]{30,}"),                     # Google refresh token
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),                       # Hugging Face
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),                       # npm
    re.compile(r"\bpypi-[A-Za-z0-9_\-]{50,}"),                    # PyPI
    re.compile(r"\bdckr_pat_[A-Za-z0-9_\-]{20,}"),                # Docker Hub
    re.compile(r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}"),                # HashiCorp Vault
    re.compile(r"\bdp\.(?:st|ct|sa|scim|audit)\.[A-Za-z0-9_.\-]{30,}"),  # Doppler
    re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{30,}"),  # SendGrid
    re.compile(r"\b(?:SK|AC)[0-9a-f]{32}\b"),                     # Twilio
    re.compile(r"\bkey-[0-9a-f]{32}\b"),                          # Mailgun
    re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b"),                    # Mailchimp
    re.compile(r"\b\d{8,10}:AA[0-9A-Za-z_\-]{33}\b"),             # Telegram bot
    re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),        # Shopify
    re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"),                   # DigitalOcean
    re.compile(r"\bdapi[a-f0-9]{32}\b"),                          # Databricks
    re.compile(r"\b(?:gsk|r8|pplx|figd|sbp|glsa|glc|sntrys|sntryu|nfp|fo1|pscale_tkn|pscale_pw|lin_api|lin_oauth)"
               r"[_\-][A-Za-z0-9_\-=]{20,}"),                     # Groq, Replicate, Perplexity, Figma, ...
    re.compile(r"\b(?:secret|ntn)_[A-Za-z0-9]{40,}\b"),            # Notion
    re.compile(r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),            # Postman
    re.compile(r"\bATATT3[A-Za-z0-9_\-=]{50,}"),                  # Atlassian
    re.compile(r"\btskey-[A-Za-z0-9_\-]{20,}"),                   # Tailscale
    re.compile(r"\b(?:sq0atp|sq0csp|EAAA)[A-Za-z0-9_\-]{20,}"),   # Square
    re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),  # JWT
    re.compile(r"\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}"),          # bcrypt hash
    re.compile(r"\$(?:1|5|6|apr1|y|argon2id?)\$[^\s:$]{1,64}\$[./A-Za-z0-9+=$,]{20,}"),  # crypt / argon2 hashes
)

# ----------------------------------------------------------------------------- values
#: A value after its label: a quoted span (spaces and all) or one run of non-space.
_VALUE = r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[^\s\"',;`]+)"
#: Words that follow "the password ... is" in prose about a password, not in one.
_PROSE_WORDS = frozenset("""
a an the not no in on at by of for to from with under inside into within like as than and or but so
stored kept saved set required missing wrong incorrect invalid expired correct valid too very still now
being been be case case-sensitive empty blank hidden masked encrypted hashed changed reset rotated managed
shared same different weak strong long short secure insecure optional mandatory needed necessary generated
sent emailed written printed available unknown unset null none also only just usually always never probably
definitely there here somewhere what where why how that this it its one ok okay fine great good bad broken
fixed locked unlocked about more less going due supposed used listed displayed shown logged leaked exposed
compromised known forgotten lost my your our their his her easy hard simple configured defined passed
provided read loaded taken needed expiring expires rejected accepted working ignored changing updated
outdated different disabled enabled active inactive gone wrong. readable visible
""".split())


def _unquoted(value: str) -> str:
    return value[1:-1] if len(value) > 1 and value[0] in "\"'`" and value[-1] == value[0] else value


def _is_prose(value: str) -> bool:
    word = _unquoted(value).rstrip(".!?)").lower()
    return not word or word in _PROSE_WORDS


def _looks_like_password(value: str) -> bool:
    """A password rather than a word: has a digit, a symbol, or a capital after the first letter."""
    core = _unquoted(value).rstrip(".!?)")
    if not core or core.startswith(REDACTED):
        return False
    return (any(c.isdigit() for c in core) or any(not c.isalnum() for c in core)
            or any(c.isupper() for c in core[1:]))


def _keep(m: re.Match[str]) -> bool:
    value = m.group("value")
    return value.startswith(REDACTED) or _unquoted(value).startswith((REDACTED, "$", "${", "%(", "{{", "<"))


def _redact_value(m: re.Match[str]) -> str:
    return m.group(0) if _keep(m) else m.group("label") + REDACTED


# ----------------------------------------------------------------------------- headers and command lines
#: Header values: Authorization (any scheme), Proxy-Authorization, cookies, API-key headers: up to
#: the end of the line or the closing quote.
_HEADER = re.compile(
    r"(?P<label>\b(?:proxy-)?authorization\s*:\s*(?:basic|bearer|token|negotiate|ntlm|aws4-hmac-sha256|"
    r"apikey|sso-key|key|splunk|otp)\s+)(?P<value>[^\s\"'][^\n\"']{5,})"
    r"|(?P<label4>\b(?:proxy-)?authorization\s*:\s*digest\s+)(?P<value4>\w+=[^\n']+)"
    r"|(?P<label2>\b(?:set-)?cookie\s*:\s*)(?P<value2>[^\s\"'][^\n\"']*=[^\n\"']*)"
    r"|(?P<label3>\b(?:x-)?(?:api|auth|access|amz-security|goog-api|rapidapi|vault|figma|shopify-access|"
    r"gitlab|github|npm|hub|cf|dd-api|dd-application|secret|session)[-_]?(?:key|token|secret)\s*:\s*)"
    r"(?P<value3>[^\s\"'][^\s\"',;]{5,})",
    re.I,
)


def _header(m: re.Match[str]) -> str:
    for label, value in (("label", "value"), ("label2", "value2"), ("label3", "value3"), ("label4", "value4")):
        if m.group(label) is not None:
            v = m.group(value)
            if v.startswith(REDACTED) or v.startswith("$"):
                return m.group(0)
            if label == "label" and not (any(c.isdigit() for c in v) or "=" in v or len(v.split()[0]) >= 12):
                return m.group(0)  # "Authorization: Basic auth is used": prose
            return m.group(label) + REDACTED
    return m.group(0)


_CMD_TAIL = r"[^\n|;&]*?"
#: Command-line flags that carry a secret, by command where the flag is short.
_FLAGS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?P<label>(?<![\w-])--?(?:password|passwd|pass|pwd|token|api-?key|apikey|auth-token|access-token|"
               r"refresh-token|secret|client-secret|secret-key|secret-access-key|private-token|bearer|"
               r"passphrase|db-password|admin-password|root-password|master-password|key-password|"
               r"store-?pass|keypass|storepass|srcstorepass|deststorepass)(?:=|\s+))" + _VALUE, re.I),
    re.compile(r"(?P<label>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mysqlpump|mariadb|"
               r"mariadb-dump|mycli)\b" + _CMD_TAIL + r"\s-p)(?P<value>[^\s\"'][^\s]*|\"[^\"\n]+\"|'[^'\n]+')"),
    re.compile(r"(?P<label>\bsshpass\b" + _CMD_TAIL + r"\s-p\s*)" + _VALUE),
    re.compile(r"(?P<label>\bredis-cli\b" + _CMD_TAIL + r"\s-a\s+)" + _VALUE),
    re.compile(r"(?P<label>\b(?:docker|podman|helm|nerdctl|buildah|skopeo)\s+(?:registry\s+)?login\b"
               + _CMD_TAIL + r"\s-p\s+)" + _VALUE),
    re.compile(r"(?P<label>\bldap\w*\b" + _CMD_TAIL + r"\s-w\s+)" + _VALUE),
    re.compile(r"(?P<label>\bopenssl\b" + _CMD_TAIL + r"\s-pass(?:in|out)?\s+pass:)" + _VALUE),
    re.compile(r"(?P<label>\b(?:curl|http|httpie|wget)\b" + _CMD_TAIL
               + r"\s(?:-u|--user|--proxy-user|-U|-a|--auth)\s*[\"']?[^\s:\"']*:)(?P<value>[^\s\"'@]+)"),
    re.compile(r"(?P<label>\b(?:smbclient|rpcclient|smbmap|crackmapexec|nxc|xfreerdp)\b" + _CMD_TAIL
               + r"\s(?:-U\s+|/u:)[^\s%]+%)(?P<value>\S+)"),
    re.compile(r"(?P<label>\bxfreerdp\b" + _CMD_TAIL + r"\s/p:)(?P<value>\S+)"),
    re.compile(r"(?P<label>\bhtpasswd\b" + _CMD_TAIL + r"\s-\w*b\w*\s+\S+\s+\S+\s+)" + _VALUE),
    re.compile(r"(?P<label>\bchpasswd\b|\b[\w.-]+:)(?P<value>(?<=:)[^\s:]+)(?=\s*\|\s*(?:sudo\s+)?chpasswd)"),
    # .netrc: "machine h login u password X", or "login u" and "password X" on lines of their own
    re.compile(r"(?P<label>\b(?:machine|default)\s+\S*\s*(?:login\s+\S+\s+)?(?:account\s+\S+\s+)?password\s+)"
               r"(?P<value>\S+)"),
    re.compile(r"(?P<label>^[ \t]*login[ \t]+\S+[ \t]*\n[ \t]*password[ \t]+)(?P<value>\S+)", re.M),
    # .pgpass: host:port:database:user:password
    re.compile(r"(?P<label>(?<![\w.:*-])[\w.*-]+:(?:\d{2,5}|\*):[\w.*-]+:[\w.*@-]+:)(?P<value>[^\s:]+)(?=\s|$)"),
)

# ----------------------------------------------------------------------------- labelled values
#: Keep the label, redact the value: "password: hunter2", "Bearer abc...", "aws_secret_access_key = ...".
_LABELLED = re.compile(
    r"(?P<label>\b(?:bearer|authorization:\s*bearer)\s+|"
    r"\b(?:password|passwd|pwd|passphrase|passcode|pin code|secret|client[_ ]secret|api[_ -]?key|access[_ ]token|"
    r"auth[_ ]token|refresh[_ ]token|session[_ ]token|id[_ ]token|token|aws_secret_access_key|private[_ ]key(?:[_ ]id)?|"
    r"secret[_ ]key|access[_ ]key|account[_ ]?key|shared[_ ]?access[_ ]?key|sig|signature|x-amz-signature|"
    r"x-amz-security-token|x-goog-signature|app[_ ]password|master[_ ]password)\b[\"']?\s*(?P<sep>[:=]|\bis\b)\s*)"
    + _VALUE,
    re.I,
)
_PASSWORD_LABEL = re.compile(r"\b(?:password|passwd|pwd|pw|passphrase|pass\s*code|pin code)\b", re.I)


def _label_value(m: re.Match[str]) -> str:
    value = m.group("value")
    if _keep(m):
        return m.group(0)
    label = m.group("label")
    is_sep = (m.group("sep") or "").lower() == "is"
    if _PASSWORD_LABEL.search(label):
        if is_sep and _is_prose(value):
            return m.group(0)  # "the password is stored in the vault"
    else:
        # "the token is great" is prose; "the token is 8f3k..." is a secret
        if is_sep and (_is_prose(value) or not (any(c.isdigit() for c in value) or len(value) >= 16)):
            return m.group(0)
        if len(_unquoted(value)) < 3 or label.lower().lstrip().startswith(("bearer", "authorization")) and len(value) < 8:
            return m.group(0)
    return label + REDACTED


#: Environment-style assignments: PGPASSWORD=..., DB_PASSWORD=..., GITHUB_TOKEN: ..., MY_API_KEY=...
_ENV_ASSIGN = re.compile(
    r"(?P<label>\b(?P<name>[A-Za-z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|_PASS|_PWD|"
    r"(?:ACCESS|ACCOUNT|PRIVATE|MASTER|SIGNING|ENCRYPTION|LICENSE)_?KEY|CREDENTIALS?)[A-Za-z0-9_]*)"
    r"[\"']?\s*(?:=|:)\s*)" + _VALUE,
    re.I,
)
#: Names that hold a setting about secrets, not a secret: MAX_TOKENS, PASSWORD_MIN_LENGTH, TOKEN_FILE.
_SETTING_NAME = re.compile(
    r"TOKENS\b|TOKENS_|(?:^|_)(?:MAX|MIN|NUM|COUNT|LENGTH|LEN|LIMIT|BUDGET|FILE|PATH|DIR|TTL|TIMEOUT|EXPIRY|EXPIRES|"
    r"URL|URI|ENDPOINT|HEADER|NAME|TYPE|ID_FIELD|POLICY|ROTATION|ENABLED|REQUIRED|RESET|HINT|FIELD|MANAGER)(?:_|$)",
    re.I,
)


def _env_assign(m: re.Match[str]) -> str:
    if _keep(m) or _SETTING_NAME.search(m.group("name")):  # PGPASSWORD=$SECRET names a variable, no secret
        return m.group(0)
    if m.group("name").isalpha() and m.group("name").islower() and m.group("name").endswith("s"):
        return m.group(0)  # a plural word heading prose ("all secrets: BFG repo-cleaner"), not a variable
    return m.group("label") + REDACTED


#: The password of a URL: scheme://user:PASSWORD@host (the user may be empty: redis://:pw@host)
_URL_PASSWORD = re.compile(r"(?P<label>\b[a-z][a-z0-9+.\-]*://[^/\s:@]*:)(?P<value>[^/\s@]+)(?=@)", re.I)
#: "pw: x", "pw is x" (always redacted), "password hunter2", "--password Tr0ub4dor&3", "the password to
#: s3cret" (redacted when the value does not read as a word, see _looks_like_password).
_PASSWORD_WORD = re.compile(
    r"(?P<label>\b(?:password|passwd|passphrase|pw)\b[\"']?(?:\s*[:=]\s*|\s+(?:is|was|to)\s+|\s+)[\"']?)"
    r"(?P<value>[^\s\"',;]+)",
    re.I,
)


def _password_word(m: re.Match[str]) -> str:
    value, label = m.group("value"), m.group("label")
    separated = re.search(r"[:=]|\s(?:is|was)\s", label, re.I) is not None
    if value.startswith(REDACTED) or not (separated or _looks_like_password(value)):
        return m.group(0)
    if separated and re.search(r"\s(?:is|was)\s", label, re.I) and _is_prose(value):
        return m.group(0)
    return label + REDACTED


# ----------------------------------------------------------------------------- prose
_PREPOSITIONED = r"(?:\s+(?:for|on|of|to|at|in|from|with|into)\b(?:\s+[\w.@:/'-]+){1,6}?)?"
_SEP = r"\s*(?P<sep>:|=|\s(?:is|was|are|were)\s)\s*"
#: Labels whose value is a number: "my bank PIN is 4321", "CVV 123", "the door code is 4455".
_DIGITS_LABEL = (r"pin|pin\s+(?:number|code)|pin#|cvv2?|cvc2?|cid|security\s+code|card\s+verification\s+(?:value|code)|"
                 r"(?:door|gate|alarm|garage|lock|safe|entry|building|keypad|locker)\s+(?:code|combination|combo)|"
                 r"combination|ssn|social\s+security\s+(?:number|no\.?|#)|(?:bank\s+)?account\s+(?:number|no\.?|#)|"
                 r"acct\s*(?:number|no\.?|#)?|routing\s+(?:number|no\.?)|sort\s+code|(?:2fa|mfa|otp|one[- ]time|"
                 r"verification|auth|authentication|sms|login)\s+code|otp|tan|card\s+number|credit\s+card(?:\s+number)?")
_DIGITS = re.compile(
    r"(?P<label>\b(?:" + _DIGITS_LABEL + r")\b" + _PREPOSITIONED + r"(?:\s*(?::|=|\s(?:is|was|are)\s|-)\s*|\s+))"
    r"(?P<value>\d(?:[\d \-]{0,22}\d)?)(?![\d.,]\d)",
    re.I,
)


def _digits(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group("value"))
    label = m.group("label").lower()
    if len(digits) < 3 or len(digits) < 4 and not re.search(r"cvv|cvc|cid|security|verification value|code|combination",
                                                              label):
        return m.group(0)
    return m.group("label") + REDACTED


#: Labels whose value is a word or token: "the password for the staging database is X".
_WORD_LABEL = (r"password|passwd|passcode|pass\s*code|pwd|pw|secret\s+key|secret\s+access\s+key|api\s*key|access\s+key|"
               r"auth(?:entication)?\s+token|access\s+token|refresh\s+token|private\s+key|signing\s+key|encryption\s+key|"
               r"master\s+key|license\s+key|product\s+key|recovery\s+codes?|backup\s+codes?|client\s+secret|"
               r"app\s+password|wi-?fi\s+key|wpa\s+key|network\s+key")
_WORD = re.compile(r"(?P<label>\b(?:" + _WORD_LABEL + r")\b" + _PREPOSITIONED + _SEP + r")" + _VALUE, re.I)
#: "my pass is X", "user: bob pass: X"
_PASS = re.compile(
    r"(?P<label>\b(?:(?:my|your|our|his|her|their|the|root|admin|user|login)\s+pass|pass(?=\s*[:=])|"
    r"(?:user(?:name)?|login)\s*[:=]?\s*\S+\s*[,/;]?\s*pass)\b"
    r"\s*(?P<sep>:|=|\s(?:is|was)\s)\s*)" + _VALUE,
    re.I,
)
#: Every word of a phrase: "my passphrase is correct horse battery staple", a wallet's seed phrase.
_PHRASE = re.compile(
    r"(?P<label>\b(?:pass\s*phrase|passphrase|seed\s+phrase|recovery\s+phrase|secret\s+(?:recovery\s+)?phrase|"
    r"backup\s+phrase|mnemonic(?:\s+phrase)?|seed\s+words|recovery\s+words|memorable\s+(?:word|phrase)|"
    r"security\s+answer|secret\s+answer)\b" + _PREPOSITIONED + _SEP + r")"
    r"(?P<value>\"[^\"\n]{1,300}\"|'[^'\n]{1,300}'|[^\n.;!?\"]{1,300})",
    re.I,
)


def _word(m: re.Match[str]) -> str:
    value = m.group("value")
    if _keep(m):
        return m.group(0)
    sep = (m.group("sep") or "").strip().lower()
    if sep in ("is", "was", "are", "were", "-") and _is_prose(value):
        return m.group(0)
    if sep in ("is", "was", "are", "were") and not _PASSWORD_LABEL.search(m.group("label")) \
            and not (_looks_like_password(value) or len(value) >= 16):
        return m.group(0)  # "the access token is refreshed hourly"; a key or token has digits or length
    if sep == "-" and not _looks_like_password(value):
        return m.group(0)
    return m.group("label") + REDACTED


def _pass(m: re.Match[str]) -> str:
    value = m.group("value")
    if _keep(m) or _is_prose(value) or not _looks_like_password(value) and m.group("sep").strip() not in (":", "="):
        return m.group(0)
    if m.group("label").lower().startswith("pass") and (not _looks_like_password(value) or value.isdigit()):
        return m.group(0)  # a bare "pass: 3" or "pass: true" counts or switches; "pass: Hunt3r!" is a password
    return m.group("label") + REDACTED


def _phrase(m: re.Match[str]) -> str:
    value = m.group("value").strip()
    if _keep(m) or _is_prose(value.split()[0] if value.split() else ""):
        return m.group(0)
    return m.group("label") + REDACTED


# ----------------------------------------------------------------------------- numbers
_CARD = re.compile(r"(?<![\w.-])(?:4\d{3}|5[1-5]\d{2}|2[2-7]\d{2}|3[47]\d{2}|6(?:011|5\d{2}|4[4-9]\d)|3(?:0[0-5]|[68]\d)\d|"
                   r"35\d{2}|62\d{2})(?:[ -]?\d){9,15}(?![\w.-]?\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    return REDACTED if 13 <= len(digits) <= 19 and _luhn(digits) else m.group(0)


def _iban(m: re.Match[str]) -> str:
    raw = m.group(0).replace(" ", "")
    if not 15 <= len(raw) <= 34:
        return m.group(0)
    moved = raw[4:] + raw[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return REDACTED if int(number) % 97 == 1 else m.group(0)


# ----------------------------------------------------------------------------- high entropy
_TOKEN = re.compile(r"[A-Za-z0-9+/_\-=.]{32,}")


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


#: A part of a file or identifier name: a word (capitalised, lower or upper case) or a short number.
_NAME_PART = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,8}|\d{1,4}")


def _looks_random(token: str) -> bool:
    """A long token mixing upper case, lower case and digits with high entropy (not a word, path or hash)."""
    stripped = token.strip(".=")
    if len(stripped) < 32 or "/" in stripped and stripped.count("/") > 2:
        return False
    classes = sum((any(c.islower() for c in stripped), any(c.isupper() for c in stripped),
                   any(c.isdigit() for c in stripped)))
    if classes < 3 or _entropy(stripped) < 4.0:
        return False
    # words joined by separators ("02-Security-Vulnerabilities-Audit.md", "Release_2024_Notes") are a name
    return not all(_NAME_PART.fullmatch(part) for part in re.split(r"[-_./]+", stripped) if part)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` fit for our files: NUL and other control characters (but tab and newlines) dropped,
    lone surrogates (half an emoji, undecodable bytes) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", _CONTROL.sub("", text))


#: Words one of which a text must hold (lower-cased) for each of :data:`_FLAGS` to be tried:
#: most text mentions no secret at all, and a substring test is much cheaper than a pattern.
_FLAG_TRIGGERS: tuple[tuple[str, ...], ...] = (
    ("pass", "pwd", "token", "key", "secret", "bearer", "storepass"),
    ("mysql", "mariadb", "mycli"), ("sshpass",), ("redis-cli",), ("login",), ("ldap",), ("openssl",),
    ("curl", "http", "wget"), ("smbclient", "rpcclient", "smbmap", "crackmapexec", "nxc", "xfreerdp"), ("xfreerdp",),
    ("htpasswd",), ("chpasswd",), ("machine", "default"), ("login",), (":",),
)
#: The passes of :func:`redact`, in order, each with the words that let it run (None: always):
#: shapes first (a key inside a labelled value is replaced whole), then labels, then prose,
#: numbers and what is left that looks random.
_PASSES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str], tuple[str, ...] | None], ...] = (
    (_HEADER, _header, ("authorization", "cookie", "key", "token", "secret")),
    *((p, _redact_value, t) for p, t in zip(_FLAGS, _FLAG_TRIGGERS, strict=True)),
    (_PHRASE, _phrase, ("phrase", "mnemonic", "seed", "recovery", "memorable", "answer")),
    (_LABELLED, _label_value, ("bearer", "pass", "pwd", "pin code", "secret", "key", "token", "sig")),
    (_ENV_ASSIGN, _env_assign, ("pass", "secret", "token", "key", "pwd", "credential")),
    (_URL_PASSWORD, lambda m: m.group("label") + REDACTED, ("://",)),
    (_WORD, _word, ("pass", "pwd", "pw", "key", "token", "code", "secret")),
    (_PASS, _pass, ("pass",)),
    (_DIGITS, _digits, ("pin", "cvv", "cvc", "cid", "code", "combination", "combo", "ssn", "social", "account",
                        "acct", "routing", "otp", "tan", "card")),
    (_PASSWORD_WORD, _password_word, ("pass", "pw")),
    (_CARD, _card, None),
    (_IBAN, _iban, None),
    (_SSN, lambda m: REDACTED, None),
    (_TOKEN, lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), None),
)
#: A run of token characters long enough for one of :data:`_SECRETS` (but the key blocks).
_LONG_RUN = re.compile(r"[A-Za-z0-9_\-./:$+=]{16,}")
_KEY_BLOCKS = 2  # the first two of _SECRETS: PEM / OpenSSH / PGP blocks, PuTTY key files


def redact(text: str) -> str:
    """``text`` without private sections and with secrets replaced by ``[redacted]`` (and
    :func:`clean`: every text that enters our files goes through here)."""
    if not text:
        return text
    text = clean(text)
    out = _PRIVATE.sub(" ", text)
    out = _STRAY_TAG.sub("", out)
    for pattern in _SECRETS if _LONG_RUN.search(out) else _SECRETS[:_KEY_BLOCKS]:
        out = pattern.sub(REDACTED, out)
    low = out.lower()
    for pattern, replace, triggers in _PASSES:
        if triggers is None or any(t in low for t in triggers):
            out = pattern.sub(replace, out)
    if out != text:
        out = re.sub(r"[ \t]{2,}", " ", out).strip()
    return out


def redact_all(value: Any) -> Any:
    """``value`` with every string in it, however nested in lists and dicts, through :func:`redact`;
    anything else unchanged (hook state files, transcript backups, episodes' artifacts)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_all(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_all(v) for k, v in value.items()}
    return value


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change anything in ``text``."""
    return redact(text) != text
