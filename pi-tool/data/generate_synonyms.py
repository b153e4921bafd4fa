#!/usr/bin/env python3
"""Generates pi-tool/src/tool_search/synonyms.txt, the general-English related words tool
search adds to a query, each at a weight below the query's own words.

    python3 generate_synonyms.py /usr/share/wordnet > ../src/tool_search/synonyms.txt

Sources, both public and named:
- WordNet 3.0 (Princeton University, WordNet licence), as Debian's package wordnet-base
  (1:3.0-37) installs it in /usr/share/wordnet: index.{noun,verb} list each word's senses,
  most frequent first; data.{noun,verb} hold each sense's words and its links;
- which words are common English: the 5,000 most frequent English words of the `wordfreq`
  package (PyPI, 3.1.1: `wordfreq.top_n_list("en", 5000)`).

Rule (nothing chosen by hand, nothing from any test question), over the nouns and verbs, and
for each word only its three most frequent senses:
- two common words in one sense (a synset: "show"/"display") are related at 50 (percent);
- a common word of a sense and one of the sense it is a kind of (its direct hypernym:
  "delete" is a way to "remove", "email" a kind of "message") at 25;
when both hold, the larger. Each pair is written once, under the word that sorts first.

Output: one line per word, `word other:percent other:percent ...`, sorted.
"""

import os
import sys

import wordfreq

COMMON_WORDS = 5000
SENSES_PER_WORD = 3
SAME_SENSE = 50
HYPERNYM = 25


def senses(folder, pos, common):
    """word -> its first synset offsets (most frequent first), for common words."""
    out = {}
    with open(os.path.join(folder, f"index.{pos}"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(" "):
                continue
            fields = line.split()
            word = fields[0]
            if word not in common:
                continue
            synset_count = int(fields[2])
            pointer_count = int(fields[3])
            offsets = fields[6 + pointer_count:6 + pointer_count + synset_count]
            out[word] = offsets[:SENSES_PER_WORD]
    return out


def synsets(folder, pos):
    """offset -> (its words, the offsets of its hypernyms of the same part of speech)."""
    out = {}
    with open(os.path.join(folder, f"data.{pos}"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(" "):
                continue
            fields = line.split(" | ")[0].split()
            offset = fields[0]
            word_count = int(fields[3], 16)
            words = [fields[4 + 2 * i].lower() for i in range(word_count)]
            at = 4 + 2 * word_count
            pointer_count = int(fields[at])
            hypernyms = []
            for i in range(pointer_count):
                symbol, target, target_pos = fields[at + 1 + 4 * i: at + 4 + 4 * i]
                if symbol in ("@", "@i") and target_pos[0] == pos[0]:
                    hypernyms.append(target)
            out[offset] = (words, hypernyms)
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    common = {w for w in wordfreq.top_n_list("en", COMMON_WORDS) if w.isalpha() and w.isascii()}
    pairs = {}

    def relate(a, b, weight):
        if a == b:
            return
        key = (min(a, b), max(a, b))
        pairs[key] = max(pairs.get(key, 0), weight)

    for pos in ("noun", "verb"):
        by_word = senses(folder, pos, common)
        data = synsets(folder, pos)
        # A synset counts for a word only among that word's first senses.
        top = {(word, offset) for word, offsets in by_word.items() for offset in offsets}
        for word, offsets in by_word.items():
            for offset in offsets:
                words, hypernyms = data[offset]
                for other in words:
                    if other in common and (other, offset) in top:
                        relate(word, other, SAME_SENSE)
                for hypernym in hypernyms:
                    for other in data[hypernym][0]:
                        if other in common and (other, hypernym) in top:
                            relate(word, other, HYPERNYM)
    lines = {}
    for (a, b), weight in sorted(pairs.items()):
        lines.setdefault(a, []).append(f"{b}:{weight}")
    for word in sorted(lines):
        print(word, " ".join(lines[word]))


if __name__ == "__main__":
    main()
