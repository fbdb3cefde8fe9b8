"""What redaction puts in place of a secret, the table of secret families (secret_families.py)
applied to a text, and the finding of the keywords that call for redaction's rules. Stdlib
only: the hook's hot path."""

from __future__ import annotations

import re

TYPE_CHECKING = False  # `typing` is not imported on the hot path
if TYPE_CHECKING:
    # The keywords a text holds, each with what follows it there once someone asked
    # (remem.record.redact._followed).
    Found = dict[str, frozenset[str] | None]
    Keywords = tuple[tuple[str, ...], dict[str, tuple[str, ...]]]

MASK = "[REDACTED]"

_compiled: dict[str, re.Pattern[str]] = {}


# Keywords are (roots, {parent: children}): each child is looked for only where its parent, a
# keyword inside it, was found (`private key` where `key` was), so a text holding none of the
# roots costs one scan for each of them. A parent comes before its children, or is in `found`.
# (Comments, not docstrings, here and below: the hook unmarshals every docstring it imports.)
def find_keywords(lowered: str, keywords: Keywords, found: Found | None = None) -> Found:
    # The keywords the text holds, added to `found` (a new one when None).
    roots, children = keywords
    hits = _held(lowered, roots)
    if found is None:
        found = dict.fromkeys(hits)
    elif hits:
        found.update(dict.fromkeys(hits))
    if found and not found.keys().isdisjoint(children):
        for parent, inside in children.items():
            if parent in found:
                found.update(dict.fromkeys(_held(lowered, inside)))
    return found


# Characters from the rarest to the commonest in what tools print. A long text is looked at for
# a keyword only when it holds the keyword's rarest character: one scan of the text for that
# character (memchr's) rules out every keyword made with it, where each keyword costs a scan of
# its own. A short text is scanned for each keyword: grouping would cost it more.
_RAREST_FIRST = "~<=zqjx987654vkw3y:/201-b_ gfhumcdpnolaeirst"
_GROUPED_FROM = 256
_groups: dict[tuple[str, ...], list[tuple[str, tuple[str, ...]]]] = {}


def _held(lowered: str, keywords: tuple[str, ...]) -> list[str]:
    # The keywords the text holds.
    if len(lowered) < _GROUPED_FROM:
        return [keyword for keyword in keywords if keyword in lowered]
    groups = _groups.get(keywords)
    if groups is None:
        groups = _groups[keywords] = _grouped(keywords)
    return [
        keyword
        for rarest, group in groups
        if rarest in lowered
        for keyword in group
        if keyword in lowered
    ]


def _grouped(keywords: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    # The keywords by their rarest character.
    by_rarest: dict[str, list[str]] = {}
    for keyword in keywords:
        rarest = min(keyword, key=_rarity)
        by_rarest.setdefault(rarest, []).append(keyword)
    return [(rarest, tuple(group)) for rarest, group in by_rarest.items()]


def _rarity(char: str) -> int:
    index = _RAREST_FIRST.find(char)
    return len(_RAREST_FIRST) if index < 0 else index


def pattern(text: str, flags: int = 0) -> re.Pattern[str]:
    compiled = _compiled.get(text)
    if compiled is None:
        compiled = _compiled[text] = re.compile(text, flags)
    return compiled


def masked(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], MASK]
        last = end
    parts.append(text[last:])
    return "".join(parts)


# The families' keywords. One made of a word and its separator (`dop_v1_` is found as `dop_`) is
# one of the text's pieces: the runs of letters and digits, each with the separator that ends it,
# found by bytes methods and a set intersection, each one loop in C; any other keyword is looked
# for anywhere, one by one. A text holding no keyword runs no family's pattern, and does not even
# load the table: the keywords are spelled here too (a test checks that they agree with it).
_PIECE_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789_.-"
_OTHER_BYTES = bytes(range(256)).translate(None, _PIECE_BYTES)
_SPACES = bytes.maketrans(_OTHER_BYTES, b" " * len(_OTHER_BYTES))
# fmt: off
PIECES = frozenset({
    b"access-", b"access_", b"age-", b"api-", b"api_", b"atlasv1.", b"authress_", b"b.", b"bb_",
    b"bkua_", b"bot.", b"bot_", b"ccipat_", b"cfpat-", b"clojars_", b"contribsys.", b"contribsys_",
    b"dbtc_", b"ddp_", b"discord-", b"discord.", b"discord_", b"discordapp.", b"dnkey-", b"doo_",
    b"dop_", b"dor_", b"dp.", b"dt0c01.", b"duffel_", b"e2b_", b"esecret_", b"ext_", b"fc-",
    b"figd_", b"fio-", b"flwseck-", b"flwseck_", b"fm1a_", b"fm1r_", b"fm2_", b"fo1_", b"gitlab_",
    b"glagent-", b"glc_", b"glcbt-", b"gldt-", b"glffct-", b"glft-", b"glimt-", b"gloas-",
    b"glptt-", b"glrt-", b"glsa_", b"glsoat-", b"gocspx-", b"gsk_", b"hcaik_", b"hooks.", b"hrku-",
    b"hvb.", b"hvr.", b"hvs.", b"ico-", b"key-", b"lin_", b"live_", b"lsv2_", b"mailchimp.",
    b"mailchimp_", b"mlsn.", b"mob-", b"napi_", b"nfp_", b"npm_", b"nrak-", b"nrii-", b"nrjs-",
    b"ntn_", b"odt_", b"ops_", b"p8e-", b"pat-", b"pat.", b"pcsk_", b"pdl_", b"phx_", b"pmak-",
    b"pnu_", b"pplx-", b"private-", b"pscale_", b"pubkey-", b"pul-", b"r8_", b"rdme_", b"re_",
    b"rk_", b"rnd_",
    b"rubygems_", b"rzp_", b"s-", b"s.", b"sat.", b"sb_", b"sbp_", b"sc_", b"scauth_", b"sdk-",
    b"secret-", b"secret_", b"sg.", b"sgp_", b"shippo_", b"shpat_", b"shpca_", b"shppa_",
    b"shpss_", b"sk-", b"sk.", b"sk_", b"sl.", b"sm_", b"sntrys_", b"sntryu_", b"sq0atp-",
    b"sq0csp-", b"sqa_", b"sqp_", b"squ_", b"st.", b"t1.", b"telegram.", b"tfp_", b"tk-",
    b"tskey-", b"tvly-", b"v1.", b"webhook.", b"xaat-", b"xai-", b"xapp-",
    b"xapt-", b"xkeysib-", b"xsmtpsib-", b"ya29.",
})
ANYWHERE = (
    "hf_", "aiza", "akia", "asia", "q~", "dapi", "eyj", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "glpat-", "atatt3", "pypi-", "dckr_", "xox", "whsec_", "machine", "pgpass",
    'send "', "send -- ", "dockerconfigjson", "dockercfg", "twilio",
)
# fmt: on
_ANYWHERE_SET = frozenset(ANYWHERE)
# (the families each piece calls for, those each other keyword calls for, the families with a
# keyword looked for anywhere), read from the table the first time a text calls for one.
_index: tuple[dict[bytes, list[int]], dict[str, list[int]], frozenset[int]] | None = None


def family_index() -> tuple[dict[bytes, list[int]], dict[str, list[int]], frozenset[int]]:
    """Which families each keyword calls for, read from the table the first time it is needed."""
    global _index
    if _index is None:
        from remem.record.secret_families import FAMILIES

        by_piece: dict[bytes, list[int]] = {}
        by_keyword: dict[str, list[int]] = {}
        for position, (_family, keywords, _pattern, _example) in enumerate(FAMILIES):
            for keyword in keywords:
                rest = keyword.lstrip("abcdefghijklmnopqrstuvwxyz0123456789")
                if rest != keyword and rest[:1] in ("_", ".", "-"):  # a word, then a separator
                    piece = keyword[: len(keyword) - len(rest) + 1]
                    by_piece.setdefault(piece.encode(), []).append(position)
                else:
                    by_keyword.setdefault(keyword.removeprefix("*"), []).append(position)
        anywhere = frozenset(position for rows in by_keyword.values() for position in rows)
        _index = (by_piece, by_keyword, anywhere)
    return _index


# `keywords_found`, when given, holds every keyword of ANYWHERE that the text holds.
def _families_due(lowered: str, keywords_found: Found | None = None) -> list[int]:
    pieces = lowered.encode("utf-8", "surrogatepass")
    for separator in (b"_", b"-", b"."):
        pieces = pieces.replace(separator, separator + b" ")
    found = PIECES.intersection(pieces.translate(_SPACES).split())
    if keywords_found is None:
        keywords = [keyword for keyword in ANYWHERE if keyword in lowered]
    else:
        keywords = [keyword for keyword in keywords_found if keyword in _ANYWHERE_SET]
    if not found and not keywords:
        return []
    by_piece, by_keyword, _anywhere = family_index()
    rows = [by_piece[piece] for piece in found]
    rows += [by_keyword[keyword] for keyword in keywords]
    return sorted({position for positions in rows for position in positions})


def mask_families(text: str, lowered: str, keywords_found: Found | None = None) -> str:
    """The text with every secret of the families its keywords call for masked; a family found
    at a word start matches only there."""
    due = _families_due(lowered, keywords_found)
    if not due:
        return text
    from remem.record.secret_families import FAMILIES

    anywhere = family_index()[2]
    for position in due:
        found = pattern(FAMILIES[position][2])
        group = "secret" if "secret" in found.groupindex else 0
        spans = [
            match.span(group)
            for match in found.finditer(text)
            if position in anywhere
            or not (match.start() and text[match.start() - 1 : match.end()][:2].isalnum())
        ]
        text = masked(text, [(start, end) for start, end in spans if start < end])
    return text
