"""Machine output in what a person typed: logs, stack traces, test runs, diffs, listings, code.

A coding session's user pastes output into prompts ("what is this: <a page of log>"). Those
lines are evidence, not statements: :func:`output_line` tells one line, :func:`pasted_output`
a whole text, :func:`prose_lines` keeps the lines of a long paste a person wrote. Used by
capture (a prompt that is only output is not extracted) and by the offline extractor (the
sentences of a prompt around a paste). Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["machine_line", "output_line", "pasted_output", "prose_lines"]

#: A line of machine output: log levels, stack frames, test runner lines, prompts, diff and
#: listing lines, progress counters, key=value dumps.
OUTPUT_LINE = re.compile(
    r"""^\s*(
        (?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d\d:\d\d)            # timestamps
      | (?:DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL|TRACE)\b[:\s]  # log levels
      | Traceback\b | During\ handling | File\ " | at\ [\w.$<>]+\(    # stack frames
      | [\w.]*(?:Error|Exception)(?::|\s*$) | [\w.]+Warning\b:      # exception and warning lines
      | >>>\ | [#|]                                                 # a REPL, comments, tables
      | (?:def|class|import|from\ \S+\ import|return|raise|const|let|var|function|public|private|async\ def|
         await|if\ \(|for\ \(|echo|sudo|npm|pip|git|curl|cd|ls)\s                # code and commands
      | (?:platform\ \w+\ --|rootdir:|cachedir:|configfile:|plugins:|collected\ \d+|=+\ .*\ =+$)  # pytest
      | (?:PASSED|FAILED|SKIPPED|ERROR)\b | \S+::\S+                   # test ids
      | [$#>]\ \S | \S+@\S+:\S*[$#]\                                # shell prompts
      | (?:diff\ --git|index\ [0-9a-f]+\.\.|@@\ |\+\+\+\ |---\ )     # diffs
      | [+-](?![-+\s]*$)\S                                          # diff lines
      | [d\-l][rwx-]{9}\s | total\ \d+$                            # ls -l
      | \d+\s*[|│→]                                                 # numbered file lines
      | (?:Downloading|Installing|Collecting|Building|Compiling|Resolved|Prepared|Installed|Uninstalled)\b
      | [\w./-]+\.\w+:\d+(?::\d+)?[:\s]                             # path:line: messages
      | [{}\[\]<>]                                                  # code, JSON, markup
    )""", re.X)



#: A line that only labels or lists: a heading ("NETWORK PERFORMANCE", "**SSH Access**",
#: "Scope:", "=== Firewall ==="), a numbered entry of a listing ("7 : /usr/bin/python3"), a
#: "Key: value" status line ("Remote Login: Off"), a table row.
_LABEL_LINE = re.compile(
    r"""^\s*(?:\#{1,6}\s|\*\*[^*]+\*\*:?\s*$|[^a-z]*$|[\w /&()-]{1,40}:\s*\S{0,24}\s*$|\d+\s*[:.)]\s+[/~\\[A-Z]|"""
    r"""[│|┃╭╰├└=]{2,}|[│|┃╭╰├└])""")
#: A person speaking of themselves: "I use hyper v", "I'm on the Max plan" (a line of a numbered
#: list the user typed, not a listing entry, however short).
_FIRST_PERSON = re.compile(r"(?:^|[\s(,;:])I(?:'m|'ve|'d|\s+am|\s+have|\s+(?:only|really|always|never|also|still)?\s*[a-z]{2,})\b")
#: The number of an entry of a numbered list the user typed ("12. ", "3) ").
_NUMBERED = re.compile(r"^\s*\d{1,3}\s*[.)]\s+")
#: Paths, URLs, file names, numbers: not words a person wrote around them.
_NOT_WORDS = re.compile(r"\S*[/\\]\S*|\S+\.\w{1,5}\b|\b\d[\w.:-]*")


def output_line(line: str) -> bool:
    """Whether one line reads as machine output or code rather than a person's words."""
    return bool(OUTPUT_LINE.match(line))


def machine_line(line: str) -> bool:
    """:func:`output_line`, a heading or listing entry, an indented line, or a fragment that is not a person's
    sentence (under three words once paths and numbers are set aside, or mostly capitalised). A line in
    which the person speaks of themselves ("14. I use hyper v") is theirs, however short."""
    if output_line(line) or line.startswith(("    ", "\t")):  # indented: output
        return True
    if _FIRST_PERSON.search(line):
        return False
    numbered = _NUMBERED.match(line)
    if numbered and line[numbered.end():].strip():  # "12. close 139, 5040": the entry is read by itself
        return machine_line(line[numbered.end():])
    if _LABEL_LINE.match(line):
        return True
    words = re.findall(r"[^\W\d_]{2,}", _NOT_WORDS.sub(" ", line))
    return len(words) < 3 or sum(1 for w in words if w.islower()) < 0.5 * len(words)


def pasted_output(text: str) -> bool:
    """Whether ``text`` is mostly machine output (most of its non-empty lines are
    :func:`machine_line`, or a fenced block holds most of it)."""
    stripped = text.strip()
    if not stripped:
        return True
    fenced = sum(len(m.group(0)) for m in re.finditer(r"```.*?(```|\Z)", stripped, re.S))
    if fenced > 0.7 * len(stripped):
        return True
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if len(lines) < 2:
        return output_line(stripped) and len(stripped.split()) > 2 and not _prose(stripped)
    if len(lines) == 2:
        return all(output_line(ln) for ln in lines)
    return sum(1 for ln in lines if machine_line(ln)) >= 0.6 * len(lines)


def _prose(line: str) -> bool:
    words = re.findall(r"[A-Za-z]{2,}", line)
    return len(words) >= 6 and sum(1 for w in words if w.islower()) >= 0.6 * len(words)


def prose_lines(text: str) -> str:
    """``text`` without its pasted lines (:func:`machine_line`) when it has three lines or more;
    a shorter text is returned as it is."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 3:
        return text
    return "\n".join(ln for ln in lines if not machine_line(ln))
