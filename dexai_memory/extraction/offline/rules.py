"""The patterns every speaker's sentences are read with: questions and their leading
statement, first and second person, prompts and advice with no fact, and the cues of
each note type (commitment, task, insight, past event, preference, relationship,
strong emotion).
"""

from __future__ import annotations

import re

from .sentences import content_words

WH_START = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|do|does|did|is|are|was|were|can|could|will|would|should|"
    r"have|has|had|any|anything|ever|wanna|got|shall|may|might|isn't|aren't|don't|didn't|won't|hasn't|haven't)\b(?!')",
    re.I,
)
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|myself|we|we're|we've|we'll|we'd|us|our|ours)\b",
                          re.I)
SECOND_PERSON = re.compile(r"\b(?:you|you're|you've|you'll|you'd|your|yours|yourself)\b", re.I)
SUBJECTLESS = re.compile(
    r"^(?:(?P<past>just |recently |finally |also )?(?P<verb>been|got|went|joined|started|picked|finished|had|made|"
    r"took|bought|visited|tried|learned|learnt|signed up|spent|saw|met|found|did|came back|moved|adopted|"
    r"decided|gonna|going to|planning|thinking|working|heading|hoping|looking forward|currently|still|off to|"
    r"can't wait|cannot wait|have to|need to|want to|love|loved|hope|wish)\b)",
    re.I,
)
SHARED_PIC = re.compile(
    r"^(?:here(?:'s| is)|this is|check (?:out|this out)|take a look at|look at|sharing|i'm sharing|i found)\s+"
    r"(?:a |an |the |my |this )?(?:(?:quick |little |recent |old |cute )?(?:pic|picture|photo|snap|shot|screenshot|"
    r"image|selfie)s?)\s+(?:of|from)\s+(?P<what>.+)$",
    re.I,
)
PURE_PROMPTS = re.compile(
    r"^(?:take a look(?: at this)?|check (?:it|this) out|look at this|see this|here you go|here ya go|"
    r"here it is|here's (?:a pic|a picture|a photo|one|this)|talk (?:to you )?soon|take care|bye|"
    r"good luck|keep (?:it up|going|at it|up the good work)|you got this|have fun|enjoy|me too|same here|"
    r"same|you too|no worries|no problem)\b[\s\w']{0,12}[.!?]*$",
    re.I,
)

_GROUP_WORDS = ("family", "kids", "children", "husband", "wife", "partner", "boyfriend", "girlfriend", "friends",
                "team", "parents", "class", "group", "club", "band", "colleagues", "son", "daughter", "dogs",
                "siblings", "brother", "sister", "mom", "dad", "fiance", "fiancee", "crew", "roommates")
GROUP_RE = re.compile(r"\b(?:my|our)\s+(?:\w+\s+)?(?P<g>" + "|".join(_GROUP_WORDS) + r")\b", re.I)
RELATIONSHIP = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(?:sister|brother|siblings?|friend|friends|bff|husband|wife|partner|boyfriend|"
    r"girlfriend|fianc[eé]e?|kids?|children|son|daughter|mom|mum|mother|dad|father|parents?|grand(?:ma|pa|mother|"
    r"father|parents?|kids?|children)|aunt|uncle|cousin|niece|nephew|family|neighbou?r|roommate|colleague|"
    r"coworker|boss|mentor|teammates?|buddy|pal)\b|\b(?:married|engaged|dating|divorced|broke up|"
    r"adopted|pregnant|baby|newborn)\b",
    re.I,
)
PREFERENCE = re.compile(
    r"\b(?:I|we)(?:\s+(?:really|also|just|absolutely|totally|truly|kinda|still|do))*\s+(?:like|love|enjoy|prefer|hate|"
    r"dislike|adore|can't stand|don't like|am (?:a |a big )?fan of|'m (?:a |a big )?fan of)\b|\bfavou?rite\b|"
    r"\bI(?:'m| am)\s+(?:really\s+|so\s+)?(?:into|keen on|passionate about|obsessed with|a (?:big |huge )?fan of)\b",
    re.I,
)
COMMITMENT = re.compile(
    r"\b(?:I|we)\s+promise\b|(?<!to )\bremind\s+(?:me|us)\s+(?:to|about|that|when)\b|"
    r"\bdon'?t\s+(?:let\s+me\s+)?forget\b|\b(?:I|we)(?:'ll|\s+will|\s+shall)\b|\b(?:I|we)(?:'m|\s+am|'re|\s+are)\s+(?:going\s+to|planning\s+(?:to|on))\b|"
    r"\b(?:I|we)\s+plan\s+to\b|^\s*(?:going\s+to|planning\s+to)\b",
    re.I,
)
STRONG_COMMITMENT = re.compile(r"\b(?:I|we)\s+promise\b|\bwants? to be reminded\b|(?<!to )\bremind\s+(?:me|us)\s+(?:to|about|that|when)\b|\bdon'?t\s+(?:let\s+me\s+)?forget\b", re.I)
TASK = re.compile(r"\b(?:I|we)\s+(?:really\s+|still\s+)?(?:need|have|has|got)\s+to\b|\bI\s+must\b|\bI\s+should\b|"
                  r"\bto-?do\b", re.I)
INSIGHT = re.compile(r"\b(?:I|we)\s+(?:\w+\s+)?(?:realized|realised|learned|learnt|discovered|figured out|noticed|"
                     r"understood|now understand|came to understand)\b|\btaught\s+(?:me|us)\b|\blesson\b", re.I)
PAST = re.compile(
    r"\b(?:I|we)(?:\s+(?:just|recently|finally|also|actually|even|first|once|already))*\s+(?:\w{3,}ed|went|got|made|"
    r"took|saw|met|had|began|bought|built|ran|won|lost|found|wrote|did|gave|came|left|heard|taught|sang|drove|flew|"
    r"ate|became|broke|brought|caught|chose|drew|fell|grew|kept|rode|sold|sent|spent|swam|told|wore|paid|quit|"
    r"spoke|sat|slept|woke|threw|held|led|felt|thought|dug)\b|\b(?:I|we)(?:'ve|\s+have)\s+(?:just\s+)?(?:been|\w{3,}ed|"
    r"got|gone|done|made|seen|met|won|found|written|bought|built|taken|begun)\b",
    re.I,
)
STRONG_EMOTION = re.compile(
    r"\b(?:passed away|died|diagnosed|cancer|divorce|married|engaged|pregnant|born|funeral|hospital|accident|"
    r"surgery|fired|laid off|promoted|graduated|adopted|moved|new job|important|life-changing|dream)\b",
    re.I,
)

#: What "I have a ..." says of a conversation, not of a life: no lasting fact.
_PASSING_OBJECTS = ("question", "questions", "idea", "ideas", "problem", "issue", "doubt", "thought", "feeling",
                    "minute", "moment", "second", "suggestion", "request", "clue", "point", "look", "go", "try",
                    "chance", "sec", "plan", "update", "bug", "error", "fix", "concern", "favor", "favour")
#: A short statement of a lasting state with one content word: "I like jazz.", "I have a dog.",
#: "I love pottery too.", "I'm vegan.", "I'm a nurse.", "We use pnpm." (the two-content-word floor
#: would drop them; "I have a question." and "I'm stuck." are not states).
SELF_STATE = re.compile(
    r"^(?:I|we)(?:\s+(?:really|also|still|totally|absolutely|now|do))*"
    r"(?:\s+(?:like|love|enjoy|hate|dislike|adore|prefer|own|have|drive|play|speak|use|collect|study|teach|coach|"
    r"ride|grow|keep|breed|volunteer at|work at|work for|work as)\s+"
    r"(?!(?:(?:a|an|the|my|our|some)\s+)?(?:it|this|that|them|these|those|one|" + "|".join(_PASSING_OBJECTS) +
    r")\b)(?:a |an |the |my |our |two |three |some )?[A-Za-z][\w+#.\-]*(?:\s+[A-Za-z][\w+#.\-]*)?|"
    r"(?:'m|\s+am|'re|\s+are)\s+(?:(?:a|an)\s+[A-Za-z][\w\-]*|vegan|vegetarian|pescatarian|teetotal|sober|"
    r"left-handed|right-handed|colou?r-?blind|diabetic|celiac|coeliac|lactose[- ]intolerant|retired|married|"
    r"single|divorced|pregnant|engaged|widowed))"
    r"(?:\s+(?:too|as well|a lot|now|these days))?[.!]?$",
    re.I,
)
INLINE_CAPTION = re.compile(r"\[(?:(?:shares?|shared) (?:an image|a photo|a picture)|image)(?::|\s+of)\s*([^\]]+)\]",
                            re.I)
IMPERATIVE = re.compile(
    r"^(?:go|keep|stay|check|take|let's|lets|make sure|don't|do not|remember|try|have|enjoy|hang|never|always|"
    r"believe|trust|look|be|give|tell|let|come|say|see|imagine|congrats|good luck|well done|way to go)\b",
    re.I,
)


def statement_of_question(sentence: str) -> str | None:
    """The statement clause leading a question ("I just got back from Paris, have you been?")."""
    clauses = re.split(r"\s*(?:[,;:]|\s-\s|\s–\s|\s—\s)\s*", sentence.rstrip("?!. "))
    if len(clauses) < 2:
        return None
    kept: list[str] = []
    for clause in clauses:
        if WH_START.match(clause) or clause.lower().startswith(("and ", "or ", "right", "huh")):
            break
        kept.append(clause)
    statement = ", ".join(kept).strip()
    if not statement or not FIRST_PERSON.search(statement) or len(content_words(statement)) < 2:
        return None
    return statement + "."
