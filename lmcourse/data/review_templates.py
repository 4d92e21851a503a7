"""The review generator's world: names, places and sentence templates, including every
phrasing of every kind of plot fact (``FACTS``).

``data/make_goodreads_sample.py`` writes the course's Goodreads stand-in from these; the
fine-tuning heads' tasks (``lmcourse.data.plot_tasks``) reuse them, so their answers and tags
are known exactly. Slots in braces are filled per book: {hero} {ally} {villain} {love}
{place} {place2} {title} {series} {author} {genre} {role} {stars} {his}, and in facts
{victim} {traitor} {killer} {relation} {artifact}.
"""

from __future__ import annotations

# ---- names and things -----------------------------------------------------------------------

FEMALE = """Ada Alys Amara Anya Briar Calla Cora Dara Delia Elin Elsa Esme Faye Greta Hana Ida
Imogen Iris Isolde Juno Kaia Kestrel Lena Lira Lyra Mara Maren Mira Nadia Nell Noor Odette
Orla Petra Quinn Rhea Rosalind Saffi Selene Signe Tamsin Tess Una Vera Willa Wren Yara Zora
Bryony Clio""".split()
MALE = """Aldric Anton Arlo Bastian Bram Cassian Caspar Corvin Dorian Edric Elias Emrys
Fenwick Gideon Hale Idris Jasper Joren Kael Lucan Magnus Matthias Niko Oren Osric Pell
Piers Quill Rafe Roran Silas Soren Stellan Tobias Ulric Valen Wystan Yorick Zeke Alaric
Benedek Cyrus Darius Emeric Florian Gareth Hollis Ivo Lorcan Marek""".split()
SURNAMES = """Ashworth Blackwood Calloway Dunmore Everly Fairfax Greaves Hawthorne Ingram
Kessler Lindqvist Marlowe Northcott Okafor Pemberton Quayle Ravensdale Sinclair Thornbury
Underhill Vance Whitlock Yardley Abernathy Brennan Castellan Delacroix Ellery Fenn Garrow
Holloway Ives Jessop Kimura Larkspur Moreau Navarro Oakes Prescott Rowntree Sato Tremaine
Varga Winslow Achterberg Bellamy""".split()
TITLE_ADJ = """Silent Hollow Broken Burning Last Forgotten Glass Iron Crimson Midnight Silver
Wicked Quiet Drowned Hidden Shattered Golden Winter Bitter Lost Scarlet Wild Pale Gilded
Secret Sleeping""".split()
TITLE_NOUN = """Crown Garden Orchard Tide Lantern Throne Library Harbour River Mirror Forest
Kingdom Sea Archive Tower Bargain Daughter Queen Storm Cipher Key Map Ashes Bridge Heir
Promise Witness Shadow""".split()
GENRES = ["fantasy", "mystery", "romance", "science fiction", "thriller", "historical fiction",
          "young adult"]
ROLES = ["baker's apprentice", "disgraced soldier", "junior detective", "cartographer",
         "smuggler", "young witch", "court musician", "starship engineer", "librarian",
         "thief", "village healer", "reluctant heir", "journalist", "lighthouse keeper"]
RELATIONS = {"F": ["mother", "sister", "twin sister", "aunt"],
             "M": ["father", "brother", "twin brother", "uncle"]}
ARTIFACTS = ["the crown", "the last map", "the glass key", "the old cipher", "the archive",
             "the iron compass", "the bell", "the sword"]


def _places() -> list[str]:
    raw = ("Ashgrove, Brackenford, Caer Lunis, Dunmarrow, Eastwatch, Fallowmere, Greywater, "
           "Harrowgate, Ironvale, Kestrel Point, Lowmarsh, Mirrenhall, Northreach, Oldcastle, "
           "Pellinor, Quarry Hill, Ravenmoor, Saltcombe, Thornwick, Umberlee, Veldmoor, "
           "Westfold, Yarrowby, Zennor Bay, Amberlight, Blackthorn Abbey, Coldharbour, "
           "Duskhollow, Emberfall, Frostmere, Gloamwood, Hollowmere, Ivywood, Larkmoor, "
           "Millbrook")
    return [p.strip() for p in raw.split(",")]


PLACES = _places()
#: Words that keep their capital letter after a prefix.
PROPER = {"I", *FEMALE, *MALE, *SURNAMES, *(w for p in PLACES for w in p.split())}

# ---- sentences without spoilers (label 0) ---------------------------------------------------
# Slots: {hero} {ally} {villain} {love} {place} {place2} {title} {series} {author} {genre}
# {role} {stars} {his} (the hero's possessive pronoun).

OPENERS = [
    "{stars} stars.", "{stars} stars, rounded up.", "Actually {stars} stars.",
    "This was my first book by {author}.", "Read this one for my book club.",
    "I picked up {title} because everyone on my feed was talking about it.",
    "I listened to the audiobook and the narrator did a lovely job.",
    "I got around to reading this one at last.", "Where do I even start with this book?",
    "This is book two of the {series} series.", "I went in knowing almost nothing.",
    "I received an advance copy in exchange for an honest review.", "Buddy read with Sam!",
    "I have had this on my shelf for years.", "Wow.", "Okay, so.",
    "My expectations were high after the first book.", "A reread for me.",
]
PREMISE = [
    "{hero} is a {role} in {place} when the story begins.",
    "The story follows {hero}, a {role} with a secret of {his} own.",
    "{hero} and {ally} set out for {place} to stop {villain}.",
    "When {ally} goes missing, {hero} is the only one who keeps looking.",
    "{villain} wants to rule {place}, and {hero} stands in the way.",
    "The book alternates between {hero} in {place} and {ally} in {place2}.",
    "It is a slow burn romance between {hero} and {love}.",
    "{hero} has one week to find out who is sending the letters.",
    "The first chapter drops you right into the war between {place} and {place2}.",
    "{hero} takes a job in {place} and meets {love} on the first day.",
    "The book opens with a body in the harbour at {place}, and {hero} is asked to look "
    "into it.",
    "{ally} and {hero} grew up together in {place}.",
]
POSITIVE = [
    "The writing is beautiful and the pacing never drags.",
    "I loved {hero} from the very first page.", "{ally} was my favourite character by far.",
    "The world building is some of the best I have read this year.",
    "{author} knows exactly how to write a page turner.",
    "The banter between {hero} and {love} had me grinning.", "I could not put it down.",
    "The side characters are as well drawn as the leads.",
    "This book made me laugh out loud more than once.",
    "The atmosphere of {place} is so vivid I could almost smell the sea.",
    "Every chapter ends on a hook, which is dangerous at two in the morning.",
    "{hero} is flawed, stubborn and completely believable.",
    "I adore the friendship between {hero} and {ally}.",
    "The prose is sharp and often very funny.", "It is a love letter to {genre}.",
    "I highlighted so many passages.", "The magic system is clever and well explained.",
    "{villain} is a genuinely menacing villain.",
]
NEGATIVE = [
    "The pacing was painfully slow in the middle.", "I never connected with {hero}.",
    "The romance felt forced and rushed.", "Too many characters and not enough depth.",
    "{villain} is a cartoon villain with no real motivation.",
    "I kept waiting for something to happen.", "The dialogue was clunky at best.",
    "I did not care about {love} at all.", "The world building was thin and confusing.",
    "I had to force myself to finish it.", "The info dumps were exhausting.",
    "{hero} makes the same mistake over and over.",
    "I wanted to like this so much more than I did.",
]
MIXED = [
    "It started slow, but the second half made up for it.",
    "Not perfect, but I had fun with it.", "Some chapters dragged, others flew by.",
    "I liked {hero} more than the plot.", "The middle sags, but the characters carry it.",
    "Good, not great.", "Solid, if a little predictable.",
    "I enjoyed {ally} far more than {hero}.",
]
#: Harmless sentences with the words spoilers use: the keyword baseline's trap.
DECOYS = [
    "I won't spoil the ending, but it was worth the wait.",
    "No spoilers, but the twist caught me completely off guard.",
    "I almost died laughing at the scene with {ally} and the goat.",
    "Everyone talks about the twist, so I was expecting something the whole time.",
    "The ending felt a little rushed to me.", "Death is a theme that runs through the book.",
    "I was dying to know who was behind it all.",
    "The murder mystery at the heart of it kept me guessing.",
    "I will not say who dies, but have tissues ready.",
    "Without giving anything away, the last hundred pages are intense.",
    "I read the last chapter twice because it was so good.",
    "{author} killed it with this one.", "{hero} finally gets some real development here.",
    "The body count is high, so be warned.", "That ending!",
    "I need the next book right now after that ending.", "Turns out the hype was deserved.",
    "It turns out I like {genre} after all.", "I saw the twist coming from a mile away.",
    "The final battle is one of the best I have read.",
    "{villain} kills without hesitation, which makes every scene tense.",
    "{hero} has to decide whether to kill {villain} or let them go.",
    "Someone in {place} is a traitor, and the fun is guessing who.",
    "The reveal at the end of part one changes the whole story.",
    "There is a death early on that sets everything in motion.",
    "I finally understand why people love {author}.",
    "The end of chapter ten had me yelling at the book.",
    "Nobody is safe in this series.", "Prepare for an ending you will want to talk about.",
]
#: Said before a spoiler span (label 0 themselves).
WARNINGS = ["Spoilers below.", "Okay, spoiler time.", "Spoilers ahead, you have been warned.",
            "I have to talk about the ending.", "Hidden for spoilers."]
#: Reactions: tagged when inside a spoiler span, untagged elsewhere (label noise).
REACTIONS = [
    "I was not ready for that.", "Still not over it.", "Why, {author}, why?",
    "My heart broke into pieces.", "I screamed.", "That scene wrecked me.",
    "I had to put the book down for a minute.", "I did not see that coming at all.",
    "Honestly, I am still processing.", "I am not okay.", "Just wow.",
]
CLOSERS = [
    "Can't wait for the next book!", "Highly recommended for fans of {genre}.",
    "I'll read everything {author} writes from now on.", "On to the sequel.",
    "Would not recommend.", "Maybe the next one will be better.",
    "I will be thinking about this one for a while.", "Recommended.",
    "If you liked the first book, you will love this one.",
    "Thanks to the publisher for the copy.", "A solid addition to the series.",
]
PREFIXES = ["Honestly, ", "Also, ", "And ", "Of course ", "So ", "To be fair, ", "Anyway, ",
            "Plus, ", "Oh, and ", "Basically, "]

# ---- spoilers (label 1): each book gets its own plot facts ----------------------------------
# A fact is (kind, roles); each kind is told in many phrasings. Some use the words a
# keyword list would catch, some do not.

FACTS = {
    "death": [
        "{victim} dies at the end.", "{victim} dies saving {hero}.",
        "I cried so hard when {victim} died.", "{villain} kills {victim} in the last chapter.",
        "{victim} does not survive the battle at {place}.",
        "I cannot believe {author} killed off {victim}.",
        "{victim} is gone by the final chapter, and {hero} has to go on alone.",
        "The funeral for {victim} in the epilogue broke me.",
        "{hero} buries {victim} under the old tree in {place}.",
        "Losing {victim} like that was brutal.", "{victim} is dead by the end of part two.",
        "The death of {victim} is the real turning point.",
    ],
    "traitor": [
        "{traitor} was working for {villain} all along.", "It turns out {traitor} is the traitor.",
        "{traitor} betrays {hero} at {place}.", "So {traitor} was the spy the whole time.",
        "{traitor} hands {hero} over to {villain} without a second thought.",
        "The person leaking the plans was {traitor}.",
        "The big twist is that {traitor} betrayed everyone.",
        "In the end {traitor} sides with {villain}.",
        "When {traitor} opens the gates of {place} for {villain}, everything falls apart.",
    ],
    "identity": [
        "{villain} is actually {hero}'s {relation}.", "{hero} learns that {villain} is {his} "
        "{relation}.", "The masked stranger is {villain}, {hero}'s {relation}.",
        "It turns out {villain} and {hero} are family.",
        "{villain} raised {hero} under a false name.",
        "The twist is that {villain} is {hero}'s {relation}.",
        "The big reveal at the end: {villain} is {hero}'s {relation}.",
        "So {hero} has been fighting {his} own {relation} the entire time.",
    ],
    "killer": [
        "The killer is {killer}.", "{killer} murdered {victim} to keep the secret.",
        "It was {killer} who poisoned {victim}.", "{killer} confesses in the final chapter.",
        "{killer} pushed {victim} off the cliff at {place}.",
        "The letters were written by {killer} the whole time.",
        "{killer} set the fire that killed {victim}.",
        "The murderer turns out to be {killer}.", "Of course the quiet one, {killer}, did it.",
    ],
    "romance": [
        "{hero} ends up with {love}.", "{hero} chooses {ally} over {love}.",
        "{hero} and {love} get married in the epilogue.",
        "{love} leaves {hero} at the altar.", "{hero} and {love} kiss on the last page.",
        "{love} goes back to {place2} without {hero}.",
        "In the end {hero} and {love} open a bookshop in {place}.",
        "{hero} and {love} finally get together at the end.",
        "{hero} picks {love}, and {ally} walks away.",
    ],
    "ending": [
        "In the end {hero} gives up the throne of {place}.",
        "{hero} destroys {artifact} and loses {his} powers.",
        "The twist at the end is that it was all a dream.",
        "{place} falls to {villain} and {hero} barely escapes.",
        "{hero} wakes up back in {place2} with no memory of any of it.",
        "The epilogue jumps ten years ahead and {hero} rules {place}.",
        "{villain} wins, and the book ends with {hero} in chains.",
        "{hero} sacrifices {artifact} to save {place}.",
        "The last line reveals that {ally} survived.",
        "{hero} was the chosen one, not {ally}.", "{hero} finally kills {villain} at {place}.",
    ],
}
FACT_WEIGHTS = {  # by genre: which kinds of fact a book's story tends to have
    "fantasy": [3, 2, 3, 0, 1, 3], "mystery": [2, 2, 1, 4, 0, 1],
    "romance": [1, 1, 1, 0, 5, 1], "science fiction": [3, 2, 2, 1, 1, 3],
    "thriller": [2, 3, 1, 3, 0, 1], "historical fiction": [3, 2, 2, 1, 2, 1],
    "young adult": [2, 2, 2, 1, 3, 2],
}
#: Spoilers about the book's end that do not need a fact of the book.
GENERIC_SPOILERS = [
    "The epilogue takes place twenty years later.", "{villain} is dead at the end.",
    "In the end {hero} forgives {villain}.",
    "Everything that happened was part of {villain}'s plan.",
    "{hero} and {ally} never make it back to {place}.",
    "The book ends with {hero} alone on the shore at {place}.",
    "Only {hero} and {love} are left standing.",
    "{ally} turns against {hero} in the final act.",
]
