"""Build ``codea1_env/data/bank.jsonl``, the built-in problem bank, from the functions below.

Each problem is an ordinary Python function (its GT solution) registered with ``@problem``, which
records its difficulty, tags and GT tests. The prompt is the function's header and docstring; the
canonical solution is the whole function. Before writing, every test is checked against its GT
solution (outputs compared by type and value with ``codea1_env.sandbox.worker.plain.values_equal``).

Usage::

    python scripts/build_bank.py           # rebuild the bank
    python scripts/build_bank.py --check   # exit 1 if the bank file is out of date
"""

from __future__ import annotations

import argparse
import ast
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codea1_env.problems import Problem, problem_from_dict, problem_to_dict  # noqa: E402
from codea1_env.problems.jsonl import write_problems  # noqa: E402
from codea1_env.sandbox.worker.plain import is_plain, values_equal  # noqa: E402

BANK_PATH = ROOT / "codea1_env" / "data" / "bank.jsonl"


@dataclass(frozen=True)
class Entry:
    function: Callable[..., Any]
    difficulty: float
    tags: tuple[str, ...]
    tests: tuple[str, ...]


BANK: list[Entry] = []


def problem(difficulty: float, tags: tuple[str, ...], tests: list[str]) -> Callable[..., Any]:
    """Register the decorated function as a bank problem with these GT tests."""

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        BANK.append(Entry(function, difficulty, tags, tuple(f"assert {t}" for t in tests)))
        return function

    return register


# ================================================================================================
# Strings
# ================================================================================================


@problem(
    0.1,
    ("strings",),
    [
        'reverse_words("hello world") == "world hello"',
        'reverse_words("  a  b   c ") == "c b a"',
        'reverse_words("") == ""',
        'reverse_words("   ") == ""',
        'reverse_words("single") == "single"',
        'reverse_words("one two three four") == "four three two one"',
        'reverse_words("tab\\tand space") == "space and tab"',
    ],
)
def reverse_words(text: str) -> str:
    """Return the words of text in reverse order, joined by single spaces.

    Words are separated by whitespace; leading, trailing and repeated whitespace is dropped.
    """
    return " ".join(reversed(text.split()))


@problem(
    0.2,
    ("strings",),
    [
        'is_palindrome("A man, a plan, a canal: Panama") == True',
        'is_palindrome("race a car") == False',
        'is_palindrome("") == True',
        'is_palindrome("!!") == True',
        'is_palindrome("ab") == False',
        "is_palindrome(\"No 'x' in Nixon\") == True",
        'is_palindrome("12321") == True',
        'is_palindrome("1a2") == False',
    ],
)
def is_palindrome(text: str) -> bool:
    """Return True if text reads the same forwards and backwards.

    Case is ignored, and so is every character that is not a letter or a digit.
    """
    cleaned = [char.lower() for char in text if char.isalnum()]
    return cleaned == cleaned[::-1]


@problem(
    0.3,
    ("strings",),
    [
        'run_length_encode("aaab") == "a3b1"',
        'run_length_encode("") == ""',
        'run_length_encode("a") == "a1"',
        'run_length_encode("abc") == "a1b1c1"',
        'run_length_encode("aabbbaa") == "a2b3a2"',
        'run_length_encode("zzzzzzzzzzzz") == "z12"',
        'run_length_encode("  x") == " 2x1"',
    ],
)
def run_length_encode(text: str) -> str:
    """Encode text as runs: each maximal run of one character becomes the character
    followed by the length of the run, e.g. "aaab" becomes "a3b1".
    """
    if not text:
        return ""
    parts = []
    current, count = text[0], 1
    for char in text[1:]:
        if char == current:
            count += 1
        else:
            parts.append(f"{current}{count}")
            current, count = char, 1
    parts.append(f"{current}{count}")
    return "".join(parts)


@problem(
    0.4,
    ("strings",),
    [
        'run_length_decode("a3b1") == "aaab"',
        'run_length_decode("") == ""',
        'run_length_decode("x10") == "xxxxxxxxxx"',
        'run_length_decode("a0b2") == "bb"',
        'run_length_decode("a1b1c1") == "abc"',
        'run_length_decode("q1") == "q"',
        'run_length_decode("m2n12") == "mmnnnnnnnnnnnn"',
    ],
)
def run_length_decode(code: str) -> str:
    """Decode a run-length code made of (letter, count) pairs, e.g. "a3b1" becomes "aaab".

    A count may have several digits; a count of 0 produces nothing.
    """
    out = []
    i = 0
    while i < len(code):
        char = code[i]
        j = i + 1
        while j < len(code) and code[j].isdigit():
            j += 1
        out.append(char * int(code[i + 1 : j]))
        i = j
    return "".join(out)


@problem(
    0.3,
    ("strings", "boundary"),
    [
        'caesar_shift("abc", 1) == "bcd"',
        'caesar_shift("xyz", 3) == "abc"',
        'caesar_shift("Hello, World!", 13) == "Uryyb, Jbeyq!"',
        'caesar_shift("abc", -1) == "zab"',
        'caesar_shift("abc", 26) == "abc"',
        'caesar_shift("abc", 53) == "bcd"',
        'caesar_shift("", 5) == ""',
        'caesar_shift("\\u00e91", 4) == "\\u00e91"',
    ],
)
def caesar_shift(text: str, shift: int) -> str:
    """Shift every ASCII letter of text by shift places in the alphabet, wrapping around and
    keeping its case. Other characters are unchanged. shift may be negative or above 26.
    """
    out = []
    for char in text:
        if "a" <= char <= "z":
            out.append(chr((ord(char) - ord("a") + shift) % 26 + ord("a")))
        elif "A" <= char <= "Z":
            out.append(chr((ord(char) - ord("A") + shift) % 26 + ord("A")))
        else:
            out.append(char)
    return "".join(out)


@problem(
    0.1,
    ("strings",),
    [
        'count_vowels("") == 0',
        'count_vowels("hello") == 2',
        'count_vowels("AEIOU") == 5',
        'count_vowels("rhythm") == 0',
        'count_vowels("Yay") == 1',
        'count_vowels("Programming Language") == 7',
        'count_vowels("aaa") == 3',
    ],
)
def count_vowels(text: str) -> int:
    """Count the vowels a, e, i, o and u in text, in either case ("y" is not a vowel)."""
    return sum(1 for char in text.lower() if char in "aeiou")


@problem(
    0.2,
    ("strings", "boundary"),
    [
        'capitalize_words("hello world") == "Hello World"',
        'capitalize_words("hELLO wORLD") == "Hello World"',
        'capitalize_words("") == ""',
        'capitalize_words("  two  spaces ") == "  Two  Spaces "',
        'capitalize_words("a") == "A"',
        'capitalize_words("123abc x") == "123abc X"',
        'capitalize_words("o\'NEIL") == "O\'neil"',
    ],
)
def capitalize_words(text: str) -> str:
    """Upper-case the first character of every space-separated word of text and lower-case the
    rest of the word. Spaces are kept exactly as they are.
    """
    return " ".join(word[:1].upper() + word[1:].lower() for word in text.split(" "))


@problem(
    0.3,
    ("strings", "lists"),
    [
        'longest_common_prefix(["flower", "flow", "flight"]) == "fl"',
        'longest_common_prefix(["dog", "racecar", "car"]) == ""',
        'longest_common_prefix([]) == ""',
        'longest_common_prefix(["alone"]) == "alone"',
        'longest_common_prefix(["same", "same"]) == "same"',
        'longest_common_prefix(["", "abc"]) == ""',
        'longest_common_prefix(["interview", "internet", "interval"]) == "inter"',
        'longest_common_prefix(["ab", "a"]) == "a"',
    ],
)
def longest_common_prefix(words: list[str]) -> str:
    """Return the longest string that every word in words starts with ("" for no words)."""
    if not words:
        return ""
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


@problem(
    0.2,
    ("strings",),
    [
        'is_anagram("listen", "silent") == True',
        'is_anagram("Dormitory", "dirty room") == True',
        'is_anagram("abc", "abd") == False',
        'is_anagram("", "") == True',
        'is_anagram("a", "") == False',
        'is_anagram("aab", "abb") == False',
        'is_anagram("Conversation", "Voices rant on") == True',
    ],
)
def is_anagram(first: str, second: str) -> bool:
    """Return True if the two strings use the same letters the same number of times,
    ignoring case and spaces.
    """

    def letters(text: str) -> list[str]:
        return sorted(char.lower() for char in text if char != " ")

    return letters(first) == letters(second)


@problem(
    0.3,
    ("strings", "boundary"),
    [
        'snake_to_camel("hello_world") == "helloWorld"',
        'snake_to_camel("") == ""',
        'snake_to_camel("___") == ""',
        'snake_to_camel("_leading_underscore") == "leadingUnderscore"',
        'snake_to_camel("already") == "already"',
        'snake_to_camel("HTTP_status_CODE") == "httpStatusCode"',
        'snake_to_camel("a__b") == "aB"',
        'snake_to_camel("version_2_final") == "version2Final"',
    ],
)
def snake_to_camel(name: str) -> str:
    """Convert a snake_case name to camelCase.

    Split on underscores and drop empty parts; the first part is lower-cased, every later part
    gets an upper-case first character and a lower-case rest.
    """
    parts = [part for part in name.split("_") if part]
    if not parts:
        return ""
    head, rest = parts[0].lower(), parts[1:]
    return head + "".join(part[0].upper() + part[1:].lower() for part in rest)


@problem(
    0.4,
    ("strings", "boundary"),
    [
        'balanced_brackets("") == True',
        'balanced_brackets("()[]{}") == True',
        'balanced_brackets("([{}])") == True',
        'balanced_brackets("(]") == False',
        'balanced_brackets("([)]") == False',
        'balanced_brackets("(((") == False',
        'balanced_brackets("())") == False',
        'balanced_brackets("a(b)c[d]") == True',
        'balanced_brackets(")(") == False',
    ],
)
def balanced_brackets(text: str) -> bool:
    """Return True if every (, [ and { in text is closed by its matching bracket in the right
    order and no bracket closes without an opener. Other characters are ignored.
    """
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for char in text:
        if char in "([{":
            stack.append(char)
        elif char in pairs:
            if not stack or stack.pop() != pairs[char]:
                return False
    return not stack


@problem(
    0.4,
    ("strings", "math"),
    [
        'roman_to_int("III") == 3',
        'roman_to_int("IV") == 4',
        'roman_to_int("IX") == 9',
        'roman_to_int("LVIII") == 58',
        'roman_to_int("MCMXCIV") == 1994',
        'roman_to_int("MMMCMXCIX") == 3999',
        'roman_to_int("I") == 1',
        'roman_to_int("XL") == 40',
        'roman_to_int("CD") == 400',
    ],
)
def roman_to_int(numeral: str) -> int:
    """Convert a Roman numeral (I, V, X, L, C, D, M, with subtractive pairs such as IV and CM)
    to an integer.
    """
    values = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, char in enumerate(numeral):
        value = values[char]
        if i + 1 < len(numeral) and values[numeral[i + 1]] > value:
            total -= value
        else:
            total += value
    return total


@problem(
    0.4,
    ("strings", "math", "boundary"),
    [
        'int_to_roman(1) == "I"',
        'int_to_roman(4) == "IV"',
        'int_to_roman(9) == "IX"',
        'int_to_roman(14) == "XIV"',
        'int_to_roman(40) == "XL"',
        'int_to_roman(90) == "XC"',
        'int_to_roman(400) == "CD"',
        'int_to_roman(1994) == "MCMXCIV"',
        'int_to_roman(3999) == "MMMCMXCIX"',
        'int_to_roman(2024) == "MMXXIV"',
    ],
)
def int_to_roman(number: int) -> str:
    """Write number (1 to 3999) as a Roman numeral, using subtractive pairs (4 is IV, 900 is CM)."""
    symbols = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ]
    out = []
    for value, symbol in symbols:
        count, number = divmod(number, value)
        out.append(symbol * count)
    return "".join(out)


@problem(
    0.2,
    ("strings", "dicts"),
    [
        'first_unique_index("leetcode") == 0',
        'first_unique_index("loveleetcode") == 2',
        'first_unique_index("aabb") == -1',
        'first_unique_index("") == -1',
        'first_unique_index("z") == 0',
        'first_unique_index("aabbc") == 4',
        'first_unique_index("abab c") == 4',
    ],
)
def first_unique_index(text: str) -> int:
    """Return the index of the first character that occurs exactly once in text, or -1."""
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    for i, char in enumerate(text):
        if counts[char] == 1:
            return i
    return -1


@problem(
    0.2,
    ("strings", "boundary"),
    [
        'longest_run("") == 0',
        'longest_run("a") == 1',
        'longest_run("abc") == 1',
        'longest_run("aabbbcc") == 3',
        'longest_run("aaaa") == 4',
        'longest_run("abbbbcddd") == 4',
        'longest_run("abccc") == 3',
    ],
)
def longest_run(text: str) -> int:
    """Return the length of the longest block of one repeated character in text (0 if empty)."""
    best = current = 0
    previous = None
    for char in text:
        current = current + 1 if char == previous else 1
        previous = char
        best = max(best, current)
    return best


@problem(
    0.3,
    ("strings", "boundary"),
    [
        'truncate("hello", 10) == "hello"',
        'truncate("hello", 5) == "hello"',
        'truncate("hello world", 8) == "hello..."',
        'truncate("hello", 4) == "h..."',
        'truncate("hello", 3) == "hel"',
        'truncate("hello", 0) == ""',
        'truncate("", 0) == ""',
        'truncate("abcdef", 5) == "ab..."',
    ],
)
def truncate(text: str, width: int) -> str:
    """Shorten text to at most width characters (width >= 0).

    A longer text is cut and ends with "..." so that the result is exactly width long; when
    width is below 4 the text is just cut to width characters.
    """
    if len(text) <= width:
        return text
    if width < 4:
        return text[:width]
    return text[: width - 3] + "..."


@problem(
    0.3,
    ("strings", "boundary"),
    [
        'count_occurrences("aaaa", "aa") == 3',
        'count_occurrences("abcabc", "abc") == 2',
        'count_occurrences("abc", "") == 0',
        'count_occurrences("", "a") == 0',
        'count_occurrences("abc", "abcd") == 0',
        'count_occurrences("ababa", "aba") == 2',
        'count_occurrences("mississippi", "issi") == 2',
        'count_occurrences("aaa", "a") == 3',
    ],
)
def count_occurrences(text: str, pattern: str) -> int:
    """Count the occurrences of pattern in text, overlapping ones included (0 for "")."""
    if not pattern:
        return 0
    last = len(text) - len(pattern)
    return sum(1 for i in range(last + 1) if text.startswith(pattern, i))


@problem(
    0.5,
    ("strings", "lists", "boundary"),
    [
        'wrap_words("the quick brown fox", 10) == ["the quick", "brown fox"]',
        'wrap_words("", 5) == []',
        'wrap_words("a b c", 1) == ["a", "b", "c"]',
        'wrap_words("a b c", 3) == ["a b", "c"]',
        'wrap_words("a b c", 5) == ["a b c"]',
        'wrap_words("extraordinary word", 5) == ["extraordinary", "word"]',
        'wrap_words("one two", 7) == ["one two"]',
        'wrap_words("one two", 6) == ["one", "two"]',
    ],
)
def wrap_words(text: str, width: int) -> list[str]:
    """Split text into lines of at most width characters, filling each line greedily with whole
    words joined by single spaces. A word longer than width gets a line of its own. Returns []
    when text has no words.
    """
    lines = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


# ================================================================================================
# Dicts
# ================================================================================================


@problem(
    0.3,
    ("dicts", "strings"),
    [
        'word_frequencies("") == {}',
        'word_frequencies("Hello hello") == {"hello": 2}',
        'word_frequencies("a-b a") == {"a": 2, "b": 1}',
        'word_frequencies("It\'s 2 o\'clock") == {"it": 1, "s": 1, "o": 1, "clock": 1}',
        'word_frequencies("   ") == {}',
        'word_frequencies("one two  two") == {"one": 1, "two": 2}',
        'word_frequencies("caf\\u00e9") == {"caf": 1}',
    ],
)
def word_frequencies(text: str) -> dict[str, int]:
    """Count the words of text. A word is a maximal run of ASCII letters; words are counted in
    lower case.
    """
    counts: dict[str, int] = {}
    word = ""
    for char in text.lower() + " ":
        if "a" <= char <= "z":
            word += char
        elif word:
            counts[word] = counts.get(word, 0) + 1
            word = ""
    return counts


@problem(
    0.3,
    ("dicts", "strings"),
    [
        'parse_key_values("a=1;b=2") == {"a": "1", "b": "2"}',
        'parse_key_values("") == {}',
        'parse_key_values(" a = x ; ;b=") == {"a": "x", "b": ""}',
        'parse_key_values("flag") == {"flag": ""}',
        'parse_key_values("k=1;k=2") == {"k": "2"}',
        'parse_key_values("url=a=b") == {"url": "a=b"}',
        'parse_key_values(";;;") == {}',
    ],
)
def parse_key_values(text: str) -> dict[str, str]:
    """Parse "key=value" pairs separated by semicolons into a dict.

    Spaces around keys and values are stripped, blank segments are ignored, a later key
    overrides an earlier one, and a segment without "=" maps its key to "".
    """
    result = {}
    for segment in text.split(";"):
        if not segment.strip():
            continue
        key, _, value = segment.partition("=")
        result[key.strip()] = value.strip()
    return result


@problem(
    0.3,
    ("dicts",),
    [
        "invert_dict({}) == {}",
        'invert_dict({"a": 1}) == {1: ["a"]}',
        'invert_dict({"a": 1, "b": 2, "c": 1}) == {1: ["a", "c"], 2: ["b"]}',
        'invert_dict({"z": 0, "y": 0, "x": 0}) == {0: ["x", "y", "z"]}',
        'invert_dict({"k": -1, "j": 5}) == {-1: ["k"], 5: ["j"]}',
        'invert_dict({"b": 3, "a": 3, "c": 4}) == {3: ["a", "b"], 4: ["c"]}',
    ],
)
def invert_dict(mapping: dict[str, int]) -> dict[int, list[str]]:
    """Map each value of mapping to the sorted list of the keys that have it."""
    inverted: dict[int, list[str]] = {}
    for key, value in mapping.items():
        inverted.setdefault(value, []).append(key)
    return {value: sorted(keys) for value, keys in inverted.items()}


@problem(
    0.2,
    ("dicts", "lists"),
    [
        "group_by_length([]) == {}",
        'group_by_length(["a", "bb", "c"]) == {1: ["a", "c"], 2: ["bb"]}',
        'group_by_length([""]) == {0: [""]}',
        'group_by_length(["hi", "hi"]) == {2: ["hi", "hi"]}',
        'group_by_length(["three", "one", "two", "four"]) == '
        '{5: ["three"], 3: ["one", "two"], 4: ["four"]}',
        'group_by_length(["x"]) == {1: ["x"]}',
    ],
)
def group_by_length(words: list[str]) -> dict[int, list[str]]:
    """Group words by their length, keeping the original order inside each group."""
    groups: dict[int, list[str]] = {}
    for word in words:
        groups.setdefault(len(word), []).append(word)
    return groups


@problem(
    0.3,
    ("dicts", "boundary"),
    [
        "merge_counts({}, {}) == {}",
        'merge_counts({"a": 1}, {}) == {"a": 1}',
        'merge_counts({"a": 1}, {"a": 2}) == {"a": 3}',
        'merge_counts({"a": 1}, {"b": 1}) == {"a": 1, "b": 1}',
        'merge_counts({"a": 2}, {"a": -2}) == {}',
        'merge_counts({"a": 0}, {}) == {}',
        'merge_counts({"x": 5, "y": 1}, {"y": -1, "z": 2}) == {"x": 5, "z": 2}',
    ],
)
def merge_counts(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    """Add two count dicts key by key; keys whose total is 0 are left out."""
    total = dict(first)
    for key, value in second.items():
        total[key] = total.get(key, 0) + value
    return {key: value for key, value in total.items() if value != 0}


@problem(
    0.5,
    ("dicts", "lists", "boundary"),
    [
        "top_k_frequent([1, 1, 1, 2, 2, 3], 2) == [1, 2]",
        "top_k_frequent([], 3) == []",
        "top_k_frequent([4, 4, 5, 5, 6], 2) == [4, 5]",
        "top_k_frequent([5, 4, 5, 4], 1) == [4]",
        "top_k_frequent([1, 2, 3], 5) == [1, 2, 3]",
        "top_k_frequent([7, 7, 8], 0) == []",
        "top_k_frequent([3, 1, 3, 2, 2], 3) == [2, 3, 1]",
    ],
)
def top_k_frequent(items: list[int], k: int) -> list[int]:
    """Return the k (>= 0) most frequent values of items, most frequent first; ties go to the
    smaller value. With fewer than k distinct values, return them all.
    """
    counts: dict[int, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    ranked = sorted(counts, key=lambda value: (-counts[value], value))
    return ranked[:k]


@problem(
    0.4,
    ("dicts", "boundary"),
    [
        'nested_get({"a": {"b": 1}}, ["a", "b"], None) == 1',
        'nested_get({"a": {"b": 1}}, ["a", "c"], 0) == 0',
        'nested_get({"a": 1}, ["a", "b"], -1) == -1',
        'nested_get({}, [], "x") == {}',
        'nested_get({"a": {"b": {"c": [1, 2]}}}, ["a", "b", "c"], None) == [1, 2]',
        'nested_get({"a": None}, ["a"], 5) == None',
        'nested_get({"x": {"y": 2}}, ["x"], None) == {"y": 2}',
    ],
)
def nested_get(data: dict, path: list, default: object) -> object:
    """Follow the keys of path through nested dicts and return the value reached.

    Return default when a key is missing or a value on the way is not a dict; an empty path
    returns data itself.
    """
    current: object = data
    for key in path:
        if not isinstance(current, dict) or key not in current:
            return default
        current = current[key]
    return current


@problem(
    0.4,
    ("dicts",),
    [
        'diff_dicts({}, {}) == {"added": [], "removed": [], "changed": []}',
        'diff_dicts({"a": 1}, {"a": 1}) == {"added": [], "removed": [], "changed": []}',
        'diff_dicts({"a": 1}, {"a": 2}) == {"added": [], "removed": [], "changed": ["a"]}',
        'diff_dicts({"a": 1}, {}) == {"added": [], "removed": ["a"], "changed": []}',
        'diff_dicts({}, {"b": 0}) == {"added": ["b"], "removed": [], "changed": []}',
        'diff_dicts({"a": 1, "b": 2, "c": 3}, {"b": 2, "c": 4, "d": 5}) == '
        '{"added": ["d"], "removed": ["a"], "changed": ["c"]}',
        'diff_dicts({"z": 1, "y": 1}, {}) == {"added": [], "removed": ["y", "z"], "changed": []}',
    ],
)
def diff_dicts(old: dict[str, int], new: dict[str, int]) -> dict[str, list[str]]:
    """Compare two dicts. Return {"added": ..., "removed": ..., "changed": ...}, each a sorted
    list of keys: keys only in new, keys only in old, and keys in both with different values.
    """
    return {
        "added": sorted(key for key in new if key not in old),
        "removed": sorted(key for key in old if key not in new),
        "changed": sorted(key for key in old if key in new and old[key] != new[key]),
    }


@problem(
    0.1,
    ("dicts", "boundary"),
    [
        "filter_by_value({}, 0) == {}",
        'filter_by_value({"a": 5, "b": 3}, 4) == {"a": 5}',
        'filter_by_value({"a": 4}, 4) == {"a": 4}',
        'filter_by_value({"a": 3}, 4) == {}',
        'filter_by_value({"x": -1, "y": 0}, 0) == {"y": 0}',
        'filter_by_value({"p": 10, "q": 20, "r": 15}, 15) == {"q": 20, "r": 15}',
    ],
)
def filter_by_value(scores: dict[str, int], threshold: int) -> dict[str, int]:
    """Return the entries of scores whose value is at least threshold."""
    return {key: value for key, value in scores.items() if value >= threshold}


@problem(
    0.3,
    ("dicts", "lists", "boundary"),
    [
        "zip_to_dict([], []) == {}",
        'zip_to_dict(["a", "b"], [1, 2]) == {"a": 1, "b": 2}',
        'zip_to_dict(["a", "b"], [1]) == {"a": 1, "b": None}',
        'zip_to_dict(["a"], [1, 2, 3]) == {"a": 1}',
        'zip_to_dict(["a", "a"], [1, 2]) == {"a": 1}',
        "zip_to_dict([], [1]) == {}",
        'zip_to_dict(["x", "y", "x"], []) == {"x": None, "y": None}',
    ],
)
def zip_to_dict(keys: list[str], values: list[int]) -> dict[str, int | None]:
    """Pair keys with values by position. Keys without a value map to None, extra values are
    ignored, and a repeated key keeps its first value.
    """
    result: dict[str, int | None] = {}
    for i, key in enumerate(keys):
        if key not in result:
            result[key] = values[i] if i < len(values) else None
    return result


@problem(
    0.2,
    ("dicts", "strings"),
    [
        "count_by_first_letter([]) == {}",
        'count_by_first_letter(["apple", "Avocado", "banana"]) == {"a": 2, "b": 1}',
        'count_by_first_letter([""]) == {}',
        'count_by_first_letter(["x"]) == {"x": 1}',
        'count_by_first_letter(["Bob", "bob", "BOB"]) == {"b": 3}',
        'count_by_first_letter(["1st", "2nd", "1x"]) == {"1": 2, "2": 1}',
    ],
)
def count_by_first_letter(words: list[str]) -> dict[str, int]:
    """Count words by their lower-cased first character; empty strings are skipped."""
    counts: dict[str, int] = {}
    for word in words:
        if word:
            first = word[0].lower()
            counts[first] = counts.get(first, 0) + 1
    return counts


@problem(
    0.2,
    ("dicts", "strings"),
    [
        'char_positions("") == {}',
        'char_positions("a") == {"a": [0]}',
        'char_positions("abca") == {"a": [0, 3], "b": [1], "c": [2]}',
        'char_positions("aa") == {"a": [0, 1]}',
        'char_positions(" x ") == {" ": [0, 2], "x": [1]}',
        'char_positions("abab") == {"a": [0, 2], "b": [1, 3]}',
    ],
)
def char_positions(text: str) -> dict[str, list[int]]:
    """Map every character of text to the ascending list of positions where it occurs."""
    positions: dict[str, list[int]] = {}
    for i, char in enumerate(text):
        positions.setdefault(char, []).append(i)
    return positions


# ================================================================================================
# Lists
# ================================================================================================


@problem(
    0.2,
    ("lists", "boundary"),
    [
        "second_largest([1, 2, 3]) == 2",
        "second_largest([3, 3, 2]) == 2",
        "second_largest([5]) == None",
        "second_largest([]) == None",
        "second_largest([4, 4, 4]) == None",
        "second_largest([-1, -5, -3]) == -3",
        "second_largest([10, 9, 10, 8]) == 9",
        "second_largest([1, 2]) == 1",
    ],
)
def second_largest(numbers: list[int]) -> int | None:
    """Return the second largest distinct value of numbers, or None if there are fewer than
    two distinct values.
    """
    distinct = sorted(set(numbers))
    return distinct[-2] if len(distinct) >= 2 else None


@problem(
    0.3,
    ("lists", "boundary"),
    [
        "rotate_list([1, 2, 3, 4, 5], 2) == [4, 5, 1, 2, 3]",
        "rotate_list([1, 2, 3], 0) == [1, 2, 3]",
        "rotate_list([1, 2, 3], 3) == [1, 2, 3]",
        "rotate_list([1, 2, 3], 4) == [3, 1, 2]",
        "rotate_list([1, 2, 3], -1) == [2, 3, 1]",
        "rotate_list([], 5) == []",
        "rotate_list([7], 100) == [7]",
        "rotate_list([1, 2], -3) == [2, 1]",
    ],
)
def rotate_list(items: list[int], steps: int) -> list[int]:
    """Return items rotated to the right by steps places (to the left when steps < 0)."""
    if not items:
        return []
    steps %= len(items)
    return items[-steps:] + items[:-steps] if steps else list(items)


@problem(
    0.2,
    ("lists", "boundary"),
    [
        "chunk_list([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]",
        "chunk_list([], 3) == []",
        "chunk_list([1, 2, 3], 3) == [[1, 2, 3]]",
        "chunk_list([1, 2, 3], 1) == [[1], [2], [3]]",
        "chunk_list([1, 2], 5) == [[1, 2]]",
        "chunk_list([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]",
    ],
)
def chunk_list(items: list[int], size: int) -> list[list[int]]:
    """Split items into consecutive chunks of size (>= 1) elements; the last may be shorter."""
    return [items[i : i + size] for i in range(0, len(items), size)]


@problem(
    0.4,
    ("lists",),
    [
        "flatten([]) == []",
        "flatten([1, 2]) == [1, 2]",
        "flatten([1, [2, [3, [4]]]]) == [1, 2, 3, 4]",
        "flatten([[], [[]]]) == []",
        "flatten([[1], 2, [[3, 4], 5]]) == [1, 2, 3, 4, 5]",
        'flatten(["a", ["b"]]) == ["a", "b"]',
        "flatten([[[[]]], 0]) == [0]",
    ],
)
def flatten(nested: list) -> list:
    """Flatten arbitrarily nested lists into one flat list, keeping the order of the elements."""
    flat = []
    for item in nested:
        if isinstance(item, list):
            flat.extend(flatten(item))
        else:
            flat.append(item)
    return flat


@problem(
    0.1,
    ("lists",),
    [
        "dedupe([]) == []",
        "dedupe([1, 1, 1]) == [1]",
        "dedupe([3, 1, 3, 2, 1]) == [3, 1, 2]",
        "dedupe([1, 2, 3]) == [1, 2, 3]",
        "dedupe([5, 4, 5, 4, 5]) == [5, 4]",
        "dedupe([-1, 1, -1]) == [-1, 1]",
    ],
)
def dedupe(items: list[int]) -> list[int]:
    """Remove repeated values, keeping the first occurrence of each in the original order."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


@problem(
    0.3,
    ("lists", "boundary"),
    [
        "window_sums([1, 2, 3, 4], 2) == [3, 5, 7]",
        "window_sums([1, 2, 3], 3) == [6]",
        "window_sums([1, 2, 3], 4) == []",
        "window_sums([1, 2, 3], 0) == []",
        "window_sums([], 1) == []",
        "window_sums([5, -5, 5], 1) == [5, -5, 5]",
        "window_sums([1, 1, 1, 1, 1], 3) == [3, 3, 3]",
        "window_sums([2, 4], -1) == []",
    ],
)
def window_sums(numbers: list[int], size: int) -> list[int]:
    """Return the sums of every run of size consecutive elements, left to right; [] when size
    is below 1 or above the length of the list.
    """
    if size < 1:
        return []
    return [sum(numbers[i : i + size]) for i in range(len(numbers) - size + 1)]


@problem(
    0.3,
    ("lists",),
    [
        "merge_sorted([], []) == []",
        "merge_sorted([1, 3, 5], [2, 4, 6]) == [1, 2, 3, 4, 5, 6]",
        "merge_sorted([1], []) == [1]",
        "merge_sorted([], [0]) == [0]",
        "merge_sorted([1, 1], [1]) == [1, 1, 1]",
        "merge_sorted([-3, 0], [-5, 10]) == [-5, -3, 0, 10]",
        "merge_sorted([1, 2, 3], [4, 5]) == [1, 2, 3, 4, 5]",
    ],
)
def merge_sorted(first: list[int], second: list[int]) -> list[int]:
    """Merge two ascending lists into one ascending list, keeping duplicates."""
    merged = []
    i = j = 0
    while i < len(first) and j < len(second):
        if first[i] <= second[j]:
            merged.append(first[i])
            i += 1
        else:
            merged.append(second[j])
            j += 1
    return merged + first[i:] + second[j:]


@problem(
    0.5,
    ("lists", "math", "boundary"),
    [
        "max_subarray_sum([]) == 0",
        "max_subarray_sum([-2, 1, -3, 4, -1, 2, 1, -5, 4]) == 6",
        "max_subarray_sum([-3, -1, -2]) == -1",
        "max_subarray_sum([5]) == 5",
        "max_subarray_sum([1, 2, 3]) == 6",
        "max_subarray_sum([2, -1, 2]) == 3",
        "max_subarray_sum([-1, 0, -2]) == 0",
        "max_subarray_sum([3, -10, 4]) == 4",
    ],
)
def max_subarray_sum(numbers: list[int]) -> int:
    """Return the largest sum of a non-empty run of consecutive elements (0 for no elements)."""
    if not numbers:
        return 0
    best = current = numbers[0]
    for number in numbers[1:]:
        current = max(number, current + number)
        best = max(best, current)
    return best


@problem(
    0.1,
    ("lists",),
    [
        "differences([]) == []",
        "differences([5]) == []",
        "differences([1, 4]) == [3]",
        "differences([1, 2, 4, 7]) == [1, 2, 3]",
        "differences([5, 3, 3]) == [-2, 0]",
        "differences([-1, 1, -1]) == [2, -2]",
    ],
)
def differences(numbers: list[int]) -> list[int]:
    """Return each element minus the element before it, for every element after the first."""
    return [b - a for a, b in zip(numbers, numbers[1:])]


@problem(
    0.3,
    ("lists", "boundary"),
    [
        "peak_indices([]) == []",
        "peak_indices([1]) == []",
        "peak_indices([1, 3, 2]) == [1]",
        "peak_indices([1, 2, 3]) == []",
        "peak_indices([1, 3, 3, 1]) == []",
        "peak_indices([0, 2, 0, 2, 0]) == [1, 3]",
        "peak_indices([5, 1, 5]) == []",
        "peak_indices([1, 2, 1, 2]) == [1]",
    ],
)
def peak_indices(numbers: list[int]) -> list[int]:
    """Return the indices of the elements strictly greater than both neighbours. The first and
    last elements have one neighbour only and are never peaks.
    """
    return [i for i in range(1, len(numbers) - 1) if numbers[i - 1] < numbers[i] > numbers[i + 1]]


@problem(
    0.4,
    ("lists", "boundary"),
    [
        "insertion_index([], 5) == 0",
        "insertion_index([1, 3, 5], 0) == 0",
        "insertion_index([1, 3, 5], 1) == 0",
        "insertion_index([1, 3, 5], 2) == 1",
        "insertion_index([1, 3, 5], 5) == 2",
        "insertion_index([1, 3, 5], 6) == 3",
        "insertion_index([2, 2, 2], 2) == 0",
        "insertion_index([1, 2, 2, 3], 3) == 3",
    ],
)
def insertion_index(sorted_numbers: list[int], target: int) -> int:
    """Return the leftmost index where target can be inserted into the ascending list
    sorted_numbers keeping it sorted: the index of the first element >= target.
    """
    low, high = 0, len(sorted_numbers)
    while low < high:
        middle = (low + high) // 2
        if sorted_numbers[middle] < target:
            low = middle + 1
        else:
            high = middle
    return low


@problem(
    0.4,
    ("lists",),
    [
        "count_inversions([]) == 0",
        "count_inversions([1, 2, 3]) == 0",
        "count_inversions([3, 2, 1]) == 3",
        "count_inversions([2, 4, 1, 3, 5]) == 3",
        "count_inversions([1, 1]) == 0",
        "count_inversions([5, 1, 1]) == 2",
        "count_inversions([4, 3, 2, 1]) == 6",
    ],
)
def count_inversions(numbers: list[int]) -> int:
    """Count the pairs of positions i < j with numbers[i] > numbers[j]."""
    return sum(
        1
        for i in range(len(numbers))
        for j in range(i + 1, len(numbers))
        if numbers[i] > numbers[j]
    )


@problem(
    0.2,
    ("lists",),
    [
        "interleave([], []) == []",
        "interleave([1, 2, 3], [4, 5, 6]) == [1, 4, 2, 5, 3, 6]",
        "interleave([1], [2, 3, 4]) == [1, 2, 3, 4]",
        "interleave([1, 2, 3], [9]) == [1, 9, 2, 3]",
        "interleave([], [1, 2]) == [1, 2]",
        "interleave([7], []) == [7]",
    ],
)
def interleave(first: list[int], second: list[int]) -> list[int]:
    """Alternate the elements of first and second, starting with first; when one list runs out,
    append the rest of the other.
    """
    out = []
    for a, b in zip(first, second):
        out.extend([a, b])
    shorter = min(len(first), len(second))
    return out + first[shorter:] + second[shorter:]


@problem(
    0.3,
    ("lists", "boundary"),
    [
        "longest_increasing_run([]) == 0",
        "longest_increasing_run([5]) == 1",
        "longest_increasing_run([1, 2, 3]) == 3",
        "longest_increasing_run([3, 2, 1]) == 1",
        "longest_increasing_run([1, 2, 2, 3]) == 2",
        "longest_increasing_run([1, 3, 5, 4, 6, 8, 10]) == 4",
        "longest_increasing_run([1, 1, 1]) == 1",
    ],
)
def longest_increasing_run(numbers: list[int]) -> int:
    """Return the length of the longest run of consecutive, strictly increasing elements
    (0 for an empty list).
    """
    best = current = 0
    for i, number in enumerate(numbers):
        current = current + 1 if i > 0 and numbers[i - 1] < number else 1
        best = max(best, current)
    return best


@problem(
    0.3,
    ("lists", "boundary"),
    [
        "majority_element([]) == None",
        "majority_element([1]) == 1",
        "majority_element([1, 1, 2]) == 1",
        "majority_element([1, 2]) == None",
        "majority_element([2, 2, 1, 1]) == None",
        "majority_element([3, 3, 4, 3]) == 3",
        "majority_element([5, 6, 5, 6, 5]) == 5",
    ],
)
def majority_element(numbers: list[int]) -> int | None:
    """Return the value found at more than half of the positions of numbers, or None."""
    counts: dict[int, int] = {}
    for number in numbers:
        counts[number] = counts.get(number, 0) + 1
        if counts[number] * 2 > len(numbers):
            return number
    return None


@problem(
    0.1,
    ("lists",),
    [
        "evens_first([]) == []",
        "evens_first([1, 2, 3, 4]) == [2, 4, 1, 3]",
        "evens_first([1, 3]) == [1, 3]",
        "evens_first([0, -1, -2]) == [0, -2, -1]",
        "evens_first([2, 2, 1]) == [2, 2, 1]",
        "evens_first([5, 4, 3, 2, 1]) == [4, 2, 5, 3, 1]",
    ],
)
def evens_first(numbers: list[int]) -> list[int]:
    """Return the even numbers followed by the odd ones, each group in its original order."""
    return [n for n in numbers if n % 2 == 0] + [n for n in numbers if n % 2 != 0]


@problem(
    0.1,
    ("lists",),
    [
        "running_max([]) == []",
        "running_max([1]) == [1]",
        "running_max([1, 3, 2, 5, 4]) == [1, 3, 3, 5, 5]",
        "running_max([5, 4, 3]) == [5, 5, 5]",
        "running_max([-3, -1, -2]) == [-3, -1, -1]",
        "running_max([2, 2]) == [2, 2]",
    ],
)
def running_max(numbers: list[int]) -> list[int]:
    """Return a list whose i-th element is the largest of numbers[0], ..., numbers[i]."""
    out: list[int] = []
    for number in numbers:
        out.append(number if not out else max(out[-1], number))
    return out


@problem(
    0.5,
    ("lists", "dicts", "boundary"),
    [
        "two_sum([2, 7, 11, 15], 9) == (0, 1)",
        "two_sum([3, 2, 4], 6) == (1, 2)",
        "two_sum([3, 3], 6) == (0, 1)",
        "two_sum([1, 2], 4) == None",
        "two_sum([], 0) == None",
        "two_sum([1, 5, 1, 5], 6) == (0, 1)",
        "two_sum([0, 4, 3, 0], 0) == (0, 3)",
        "two_sum([5, 1, 4, 1], 2) == (1, 3)",
    ],
)
def two_sum(numbers: list[int], target: int) -> tuple[int, int] | None:
    """Find positions i < j with numbers[i] + numbers[j] == target. Return (i, j) for the
    smallest such j and, for that j, the smallest i; None if there is no such pair.
    """
    first_seen: dict[int, int] = {}
    for j, value in enumerate(numbers):
        if target - value in first_seen:
            return (first_seen[target - value], j)
        first_seen.setdefault(value, j)
    return None


@problem(
    0.6,
    ("lists", "boundary"),
    [
        "merge_intervals([]) == []",
        "merge_intervals([[1, 3], [2, 6], [8, 10], [15, 18]]) == [[1, 6], [8, 10], [15, 18]]",
        "merge_intervals([[1, 2], [2, 3]]) == [[1, 3]]",
        "merge_intervals([[1, 2], [3, 4]]) == [[1, 2], [3, 4]]",
        "merge_intervals([[5, 6], [1, 2]]) == [[1, 2], [5, 6]]",
        "merge_intervals([[1, 10], [2, 3]]) == [[1, 10]]",
        "merge_intervals([[4, 4]]) == [[4, 4]]",
        "merge_intervals([[1, 4], [0, 0]]) == [[0, 0], [1, 4]]",
    ],
)
def merge_intervals(intervals: list[list[int]]) -> list[list[int]]:
    """Merge overlapping or touching closed intervals [start, end] and return them sorted by
    start: [1, 2] and [2, 3] merge into [1, 3], while [1, 2] and [3, 4] stay apart.
    """
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


@problem(
    0.7,
    ("lists", "boundary"),
    [
        "spiral_order([]) == []",
        "spiral_order([[1]]) == [1]",
        "spiral_order([[1, 2], [3, 4]]) == [1, 2, 4, 3]",
        "spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [1, 2, 3, 6, 9, 8, 7, 4, 5]",
        "spiral_order([[1, 2, 3, 4]]) == [1, 2, 3, 4]",
        "spiral_order([[1], [2], [3]]) == [1, 2, 3]",
        "spiral_order([[1, 2, 3], [4, 5, 6]]) == [1, 2, 3, 6, 5, 4]",
        "spiral_order([[]]) == []",
    ],
)
def spiral_order(matrix: list[list[int]]) -> list[int]:
    """Return the elements of a rectangular matrix (a list of rows) in clockwise spiral order,
    starting at the top-left corner.
    """
    result = []
    top, bottom = 0, len(matrix) - 1
    left, right = 0, (len(matrix[0]) - 1) if matrix else -1
    while top <= bottom and left <= right:
        for column in range(left, right + 1):
            result.append(matrix[top][column])
        top += 1
        for row in range(top, bottom + 1):
            result.append(matrix[row][right])
        right -= 1
        if top <= bottom:
            for column in range(right, left - 1, -1):
                result.append(matrix[bottom][column])
            bottom -= 1
        if left <= right:
            for row in range(bottom, top - 1, -1):
                result.append(matrix[row][left])
            left += 1
    return result


@problem(
    0.3,
    ("lists",),
    [
        "transpose([]) == []",
        "transpose([[1]]) == [[1]]",
        "transpose([[1, 2, 3]]) == [[1], [2], [3]]",
        "transpose([[1], [2]]) == [[1, 2]]",
        "transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]",
        "transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]",
    ],
)
def transpose(matrix: list[list[int]]) -> list[list[int]]:
    """Return the transpose of a rectangular matrix given as a list of rows."""
    return [list(column) for column in zip(*matrix)]


@problem(
    0.5,
    ("lists", "strings", "boundary"),
    [
        "compress_ranges([]) == []",
        'compress_ranges([1]) == ["1"]',
        'compress_ranges([1, 2, 3]) == ["1-3"]',
        'compress_ranges([1, 3]) == ["1", "3"]',
        'compress_ranges([0, 1, 2, 4, 6, 7]) == ["0-2", "4", "6-7"]',
        'compress_ranges([-3, -2, -1, 1]) == ["-3--1", "1"]',
        'compress_ranges([5, 6]) == ["5-6"]',
    ],
)
def compress_ranges(numbers: list[int]) -> list[str]:
    """Summarise an ascending list of distinct integers: every run of consecutive numbers
    becomes "first-last" and a number on its own stays "number".
    """
    out = []
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        out.append(str(numbers[i]) if i == j else f"{numbers[i]}-{numbers[j]}")
        i = j + 1
    return out


# ================================================================================================
# Math
# ================================================================================================


@problem(
    0.1,
    ("math", "boundary"),
    [
        "clamp(5, 0, 10) == 5",
        "clamp(-1, 0, 10) == 0",
        "clamp(11, 0, 10) == 10",
        "clamp(0, 0, 10) == 0",
        "clamp(10, 0, 10) == 10",
        "clamp(3, 3, 3) == 3",
        "clamp(-5, -10, -1) == -5",
        "clamp(100, -10, -1) == -1",
    ],
)
def clamp(value: int, low: int, high: int) -> int:
    """Return value limited to the closed range [low, high], where low <= high."""
    return max(low, min(value, high))


@problem(
    0.2,
    ("math", "boundary"),
    [
        "is_leap_year(2024) == True",
        "is_leap_year(2023) == False",
        "is_leap_year(1900) == False",
        "is_leap_year(2000) == True",
        "is_leap_year(2100) == False",
        "is_leap_year(2400) == True",
        "is_leap_year(4) == True",
        "is_leap_year(1) == False",
    ],
)
def is_leap_year(year: int) -> bool:
    """Return True if year is a leap year in the Gregorian calendar: divisible by 4, except
    centuries, which must be divisible by 400.
    """
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


@problem(
    0.2,
    ("math", "boundary"),
    [
        "gcd(12, 18) == 6",
        "gcd(0, 0) == 0",
        "gcd(0, 5) == 5",
        "gcd(7, 0) == 7",
        "gcd(-12, 18) == 6",
        "gcd(17, 13) == 1",
        "gcd(100, -75) == 25",
        "gcd(21, 21) == 21",
    ],
)
def gcd(a: int, b: int) -> int:
    """Return the greatest common divisor of a and b, never negative; gcd(0, 0) is 0."""
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


@problem(
    0.3,
    ("math", "boundary"),
    [
        "lcm(4, 6) == 12",
        "lcm(0, 5) == 0",
        "lcm(5, 0) == 0",
        "lcm(7, 3) == 21",
        "lcm(-4, 6) == 12",
        "lcm(8, 8) == 8",
        "lcm(1, 9) == 9",
        "lcm(12, 18) == 36",
    ],
)
def lcm(a: int, b: int) -> int:
    """Return the least common multiple of a and b, never negative; 0 if either is 0."""
    if a == 0 or b == 0:
        return 0
    x, y = abs(a), abs(b)
    while y:
        x, y = y, x % y
    return abs(a * b) // x


@problem(
    0.2,
    ("math", "boundary"),
    [
        "is_prime(-7) == False",
        "is_prime(0) == False",
        "is_prime(1) == False",
        "is_prime(2) == True",
        "is_prime(3) == True",
        "is_prime(4) == False",
        "is_prime(97) == True",
        "is_prime(91) == False",
        "is_prime(7919) == True",
    ],
)
def is_prime(n: int) -> bool:
    """Return True if n is a prime number (numbers below 2 are not prime)."""
    if n < 2:
        return False
    divisor = 2
    while divisor * divisor <= n:
        if n % divisor == 0:
            return False
        divisor += 1
    return True


@problem(
    0.1,
    ("math",),
    [
        "digit_sum(0) == 0",
        "digit_sum(7) == 7",
        "digit_sum(123) == 6",
        "digit_sum(-123) == 6",
        "digit_sum(1000) == 1",
        "digit_sum(99999) == 45",
        "digit_sum(-5) == 5",
    ],
)
def digit_sum(n: int) -> int:
    """Return the sum of the decimal digits of n, ignoring its sign."""
    return sum(int(digit) for digit in str(abs(n)))


@problem(
    0.2,
    ("math",),
    [
        "collatz_steps(1) == 0",
        "collatz_steps(2) == 1",
        "collatz_steps(3) == 7",
        "collatz_steps(4) == 2",
        "collatz_steps(6) == 8",
        "collatz_steps(7) == 16",
        "collatz_steps(27) == 111",
        "collatz_steps(16) == 4",
    ],
)
def collatz_steps(n: int) -> int:
    """Count the steps from the positive integer n to 1, where a step halves an even number and
    turns an odd number m into 3 * m + 1.
    """
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@problem(
    0.2,
    ("math", "strings", "boundary"),
    [
        "fizzbuzz(0) == []",
        'fizzbuzz(1) == ["1"]',
        'fizzbuzz(3) == ["1", "2", "Fizz"]',
        'fizzbuzz(5) == ["1", "2", "Fizz", "4", "Buzz"]',
        'fizzbuzz(15) == ["1", "2", "Fizz", "4", "Buzz", "Fizz", "7", "8", "Fizz", "Buzz", "11", '
        '"Fizz", "13", "14", "FizzBuzz"]',
        "fizzbuzz(-3) == []",
    ],
)
def fizzbuzz(n: int) -> list[str]:
    """Return the strings for 1 to n: "Fizz" for multiples of 3, "Buzz" for multiples of 5,
    "FizzBuzz" for multiples of both, and the number itself otherwise.
    """
    out = []
    for i in range(1, n + 1):
        word = ("Fizz" if i % 3 == 0 else "") + ("Buzz" if i % 5 == 0 else "")
        out.append(word or str(i))
    return out


@problem(
    0.4,
    ("math", "strings", "boundary"),
    [
        'to_base(0, 2) == "0"',
        'to_base(5, 2) == "101"',
        'to_base(255, 16) == "ff"',
        'to_base(-255, 16) == "-ff"',
        'to_base(8, 8) == "10"',
        'to_base(35, 7) == "50"',
        'to_base(15, 10) == "15"',
        'to_base(1, 2) == "1"',
        'to_base(16, 16) == "10"',
    ],
)
def to_base(number: int, base: int) -> str:
    """Write number in base 2 to 16 with digits 0-9 and a-f, with a leading "-" if negative."""
    digits = "0123456789abcdef"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    number = abs(number)
    out = []
    while number:
        number, remainder = divmod(number, base)
        out.append(digits[remainder])
    return sign + "".join(reversed(out))


@problem(
    0.4,
    ("math", "boundary"),
    [
        "factorial_trailing_zeros(0) == 0",
        "factorial_trailing_zeros(4) == 0",
        "factorial_trailing_zeros(5) == 1",
        "factorial_trailing_zeros(10) == 2",
        "factorial_trailing_zeros(24) == 4",
        "factorial_trailing_zeros(25) == 6",
        "factorial_trailing_zeros(100) == 24",
        "factorial_trailing_zeros(125) == 31",
    ],
)
def factorial_trailing_zeros(n: int) -> int:
    """Return the number of trailing zeros in the decimal form of n! (n >= 0)."""
    zeros = 0
    power = 5
    while power <= n:
        zeros += n // power
        power *= 5
    return zeros


@problem(
    0.2,
    ("math",),
    [
        "fibonacci(0) == 0",
        "fibonacci(1) == 1",
        "fibonacci(2) == 1",
        "fibonacci(3) == 2",
        "fibonacci(10) == 55",
        "fibonacci(20) == 6765",
        "fibonacci(50) == 12586269025",
    ],
)
def fibonacci(n: int) -> int:
    """Return the n-th Fibonacci number, where fibonacci(0) is 0 and fibonacci(1) is 1."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@problem(
    0.2,
    ("math", "boundary"),
    [
        "is_perfect_square(-4) == False",
        "is_perfect_square(0) == True",
        "is_perfect_square(1) == True",
        "is_perfect_square(2) == False",
        "is_perfect_square(16) == True",
        "is_perfect_square(15) == False",
        "is_perfect_square(17) == False",
        "is_perfect_square(1000000) == True",
    ],
)
def is_perfect_square(n: int) -> bool:
    """Return True if n is the square of an integer (negative numbers are not)."""
    import math

    return n >= 0 and math.isqrt(n) ** 2 == n


@problem(
    0.3,
    ("math", "lists", "boundary"),
    [
        "prime_factors(1) == []",
        "prime_factors(0) == []",
        "prime_factors(-8) == []",
        "prime_factors(2) == [2]",
        "prime_factors(12) == [2, 2, 3]",
        "prime_factors(97) == [97]",
        "prime_factors(360) == [2, 2, 2, 3, 3, 5]",
        "prime_factors(1001) == [7, 11, 13]",
    ],
)
def prime_factors(n: int) -> list[int]:
    """Return the prime factors of n in ascending order, repeated by multiplicity; [] if n < 2."""
    factors = []
    divisor = 2
    while n >= 2 and divisor * divisor <= n:
        while n % divisor == 0:
            factors.append(divisor)
            n //= divisor
        divisor += 1
    if n >= 2:
        factors.append(n)
    return factors


@problem(
    0.4,
    ("math", "boundary"),
    [
        "integer_sqrt(0) == 0",
        "integer_sqrt(1) == 1",
        "integer_sqrt(3) == 1",
        "integer_sqrt(4) == 2",
        "integer_sqrt(8) == 2",
        "integer_sqrt(9) == 3",
        "integer_sqrt(99) == 9",
        "integer_sqrt(1000000000000) == 1000000",
    ],
)
def integer_sqrt(n: int) -> int:
    """Return the largest integer r with r * r <= n, for n >= 0, without floating point."""
    low, high = 0, n + 1
    while high - low > 1:
        middle = (low + high) // 2
        if middle * middle <= n:
            low = middle
        else:
            high = middle
    return low


@problem(
    0.3,
    ("math", "boundary"),
    [
        "days_in_month(2023, 1) == 31",
        "days_in_month(2023, 2) == 28",
        "days_in_month(2024, 2) == 29",
        "days_in_month(1900, 2) == 28",
        "days_in_month(2000, 2) == 29",
        "days_in_month(2023, 4) == 30",
        "days_in_month(2023, 12) == 31",
        "days_in_month(2023, 11) == 30",
    ],
)
def days_in_month(year: int, month: int) -> int:
    """Return the number of days in month (1-12) of year in the Gregorian calendar."""
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


@problem(
    0.5,
    ("math", "boundary"),
    [
        "round_to_multiple(7, 5) == 5",
        "round_to_multiple(8, 5) == 10",
        "round_to_multiple(5, 10) == 10",
        "round_to_multiple(-5, 10) == 0",
        "round_to_multiple(-6, 10) == -10",
        "round_to_multiple(0, 3) == 0",
        "round_to_multiple(14, 4) == 16",
        "round_to_multiple(13, 4) == 12",
        "round_to_multiple(1, 1) == 1",
    ],
)
def round_to_multiple(value: int, step: int) -> int:
    """Round value to the nearest multiple of the positive integer step; exact halves round up
    (towards positive infinity).
    """
    return (2 * value + step) // (2 * step) * step


@problem(
    0.1,
    ("math", "boundary"),
    [
        'letter_grade(100) == "A"',
        'letter_grade(90) == "A"',
        'letter_grade(89) == "B"',
        'letter_grade(80) == "B"',
        'letter_grade(79) == "C"',
        'letter_grade(70) == "C"',
        'letter_grade(60) == "D"',
        'letter_grade(59) == "F"',
        'letter_grade(0) == "F"',
    ],
)
def letter_grade(score: int) -> str:
    """Return "A" for a score of 90 or more, "B" for 80-89, "C" for 70-79, "D" for 60-69 and
    "F" below 60.
    """
    for bound, grade in ((90, "A"), (80, "B"), (70, "C"), (60, "D")):
        if score >= bound:
            return grade
    return "F"


@problem(
    0.3,
    ("math", "boundary"),
    [
        "shipping_cost(0) == 0",
        "shipping_cost(-3) == 0",
        "shipping_cost(1) == 5",
        "shipping_cost(2) == 8",
        "shipping_cost(3) == 8",
        "shipping_cost(5) == 8",
        "shipping_cost(6) == 10",
        "shipping_cost(10) == 18",
    ],
)
def shipping_cost(weight: int) -> int:
    """Return the cost of shipping a parcel of weight whole kilograms: 0 if weight <= 0,
    5 up to 1 kg, 8 up to 5 kg, and above 5 kg 8 plus 2 for every kilogram beyond 5.
    """
    if weight <= 0:
        return 0
    if weight <= 1:
        return 5
    if weight <= 5:
        return 8
    return 8 + 2 * (weight - 5)


@problem(
    0.2,
    ("math", "boundary"),
    [
        "ticket_price(0) == 0",
        "ticket_price(2) == 0",
        "ticket_price(3) == 8",
        "ticket_price(12) == 8",
        "ticket_price(13) == 15",
        "ticket_price(64) == 15",
        "ticket_price(65) == 9",
        "ticket_price(90) == 9",
    ],
)
def ticket_price(age: int) -> int:
    """Return the ticket price for a visitor of age years: free under 3, 8 for ages 3-12,
    15 for ages 13-64 and 9 from 65 on.
    """
    if age < 3:
        return 0
    if age <= 12:
        return 8
    if age <= 64:
        return 15
    return 9


@problem(
    0.1,
    ("math", "boundary"),
    [
        "count_digits(0) == 1",
        "count_digits(9) == 1",
        "count_digits(10) == 2",
        "count_digits(-10) == 2",
        "count_digits(99999) == 5",
        "count_digits(100000) == 6",
        "count_digits(-7) == 1",
    ],
)
def count_digits(n: int) -> int:
    """Return the number of decimal digits of n, ignoring its sign (0 has one digit)."""
    return len(str(abs(n)))


@problem(
    0.2,
    ("math", "boundary"),
    [
        "reverse_integer(123) == 321",
        "reverse_integer(-123) == -321",
        "reverse_integer(0) == 0",
        "reverse_integer(120) == 21",
        "reverse_integer(-120) == -21",
        "reverse_integer(5) == 5",
        "reverse_integer(1000) == 1",
        "reverse_integer(10101) == 10101",
    ],
)
def reverse_integer(n: int) -> int:
    """Reverse the decimal digits of n and keep its sign; trailing zeros disappear, so -120
    becomes -21.
    """
    reversed_abs = int(str(abs(n))[::-1])
    return -reversed_abs if n < 0 else reversed_abs


@problem(
    0.5,
    ("math", "strings", "boundary"),
    [
        "binary_gap(1) == 0",
        "binary_gap(5) == 1",
        "binary_gap(9) == 2",
        "binary_gap(20) == 1",
        "binary_gap(15) == 0",
        "binary_gap(32) == 0",
        "binary_gap(529) == 4",
        "binary_gap(1041) == 5",
    ],
)
def binary_gap(n: int) -> int:
    """Return the length of the longest run of zeros with a one on both sides in the binary
    form of the positive integer n (0 if there is none).
    """
    bits = bin(n)[2:].rstrip("0")
    return max(len(run) for run in bits.split("1"))


@problem(
    0.2,
    ("math", "boundary"),
    [
        "sum_of_multiples(0) == 0",
        "sum_of_multiples(1) == 0",
        "sum_of_multiples(3) == 0",
        "sum_of_multiples(4) == 3",
        "sum_of_multiples(6) == 8",
        "sum_of_multiples(10) == 23",
        "sum_of_multiples(16) == 60",
        "sum_of_multiples(-5) == 0",
    ],
)
def sum_of_multiples(limit: int) -> int:
    """Return the sum of the positive integers below limit that are multiples of 3 or 5."""
    return sum(i for i in range(1, limit) if i % 3 == 0 or i % 5 == 0)


@problem(
    0.2,
    ("math", "lists"),
    [
        "pascal_row(0) == [1]",
        "pascal_row(1) == [1, 1]",
        "pascal_row(2) == [1, 2, 1]",
        "pascal_row(4) == [1, 4, 6, 4, 1]",
        "pascal_row(5) == [1, 5, 10, 10, 5, 1]",
        "pascal_row(10) == [1, 10, 45, 120, 210, 252, 210, 120, 45, 10, 1]",
    ],
)
def pascal_row(n: int) -> list[int]:
    """Return row n (n >= 0) of Pascal's triangle; row 0 is [1]."""
    row = [1]
    for _ in range(n):
        row = [a + b for a, b in zip([0] + row, row + [0])]
    return row


@problem(
    0.2,
    ("math", "lists", "boundary"),
    [
        "average([]) == None",
        "average([1]) == 1.0",
        "average([1, 2]) == 1.5",
        "average([1, 2, 3, 4]) == 2.5",
        "average([-1, 1]) == 0.0",
        "average([2, 2, 2]) == 2.0",
        "average([1, 2, 4]) == 2.3333333333333335",
    ],
)
def average(numbers: list[int]) -> float | None:
    """Return the arithmetic mean of numbers as a float, or None for an empty list."""
    if not numbers:
        return None
    return sum(numbers) / len(numbers)


@problem(
    0.3,
    ("math", "lists", "boundary"),
    [
        "median([1]) == 1.0",
        "median([3, 1, 2]) == 2.0",
        "median([1, 2, 3, 4]) == 2.5",
        "median([4, 1]) == 2.5",
        "median([5, 5, 5, 5]) == 5.0",
        "median([-3, -1, -2, 10]) == -1.5",
        "median([7, 1, 3, 9, 5]) == 5.0",
    ],
)
def median(numbers: list[int]) -> float:
    """Return the median of a non-empty list as a float: the middle value after sorting, or the
    mean of the two middle values when the length is even.
    """
    ordered = sorted(numbers)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2


# ================================================================================================
# Boundary conditions
# ================================================================================================


@problem(
    0.3,
    ("strings", "boundary"),
    [
        'is_valid_time("00:00") == True',
        'is_valid_time("23:59") == True',
        'is_valid_time("24:00") == False',
        'is_valid_time("12:60") == False',
        'is_valid_time("9:30") == False',
        'is_valid_time("09:30") == True',
        'is_valid_time("12-30") == False',
        'is_valid_time("") == False',
        'is_valid_time("ab:cd") == False',
    ],
)
def is_valid_time(text: str) -> bool:
    """Return True if text is a 24-hour time "HH:MM" with two digits each, hours 00-23 and
    minutes 00-59.
    """
    if len(text) != 5 or text[2] != ":":
        return False
    hours, minutes = text[:2], text[3:]
    if not all(char in "0123456789" for char in hours + minutes):
        return False
    return int(hours) <= 23 and int(minutes) <= 59


@problem(
    0.5,
    ("math", "boundary"),
    [
        "next_day(2023, 1, 1) == (2023, 1, 2)",
        "next_day(2023, 1, 31) == (2023, 2, 1)",
        "next_day(2023, 2, 28) == (2023, 3, 1)",
        "next_day(2024, 2, 28) == (2024, 2, 29)",
        "next_day(2024, 2, 29) == (2024, 3, 1)",
        "next_day(2023, 12, 31) == (2024, 1, 1)",
        "next_day(2023, 4, 30) == (2023, 5, 1)",
        "next_day(1900, 2, 28) == (1900, 3, 1)",
    ],
)
def next_day(year: int, month: int, day: int) -> tuple[int, int, int]:
    """Return the day after the valid date year-month-day as (year, month, day), in the
    Gregorian calendar.
    """
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    lengths = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if day < lengths[month - 1]:
        return (year, month, day + 1)
    if month < 12:
        return (year, month + 1, 1)
    return (year + 1, 1, 1)


@problem(
    0.4,
    ("lists", "boundary"),
    [
        "bucket_index(5, []) == 0",
        "bucket_index(0, [10, 20]) == 0",
        "bucket_index(9, [10, 20]) == 0",
        "bucket_index(10, [10, 20]) == 1",
        "bucket_index(15, [10, 20]) == 1",
        "bucket_index(20, [10, 20]) == 2",
        "bucket_index(25, [10, 20]) == 2",
        "bucket_index(10, [10, 10, 20]) == 2",
    ],
)
def bucket_index(value: int, edges: list[int]) -> int:
    """Given the ascending bucket boundaries edges, return the number of edges less than or
    equal to value: the index of the bucket value falls in.
    """
    return sum(1 for edge in edges if edge <= value)


@problem(
    0.3,
    ("strings", "boundary"),
    [
        'is_strong_password("Abcdefg1") == True',
        'is_strong_password("Abcdef1") == False',
        'is_strong_password("abcdefg1") == False',
        'is_strong_password("ABCDEFG1") == False',
        'is_strong_password("Abcdefgh") == False',
        'is_strong_password("") == False',
        'is_strong_password("aB3aB3aB3") == True',
        'is_strong_password("12345678Aa") == True',
    ],
)
def is_strong_password(password: str) -> bool:
    """Return True if password has at least 8 characters, including at least one lower-case
    ASCII letter, one upper-case ASCII letter and one digit.
    """
    return (
        len(password) >= 8
        and any("a" <= char <= "z" for char in password)
        and any("A" <= char <= "Z" for char in password)
        and any("0" <= char <= "9" for char in password)
    )


@problem(
    0.3,
    ("lists", "boundary"),
    [
        "page_items([1, 2, 3, 4, 5], 1, 2) == [1, 2]",
        "page_items([1, 2, 3, 4, 5], 3, 2) == [5]",
        "page_items([1, 2, 3, 4, 5], 4, 2) == []",
        "page_items([1, 2, 3], 0, 2) == []",
        "page_items([1, 2, 3], -1, 2) == []",
        "page_items([], 1, 5) == []",
        "page_items([1, 2, 3], 1, 3) == [1, 2, 3]",
        "page_items([1, 2, 3], 2, 3) == []",
    ],
)
def page_items(items: list[int], page: int, per_page: int) -> list[int]:
    """Return the items on the given 1-based page of per_page (>= 1) items each; [] for a page
    before the first or after the last.
    """
    if page < 1:
        return []
    start = (page - 1) * per_page
    return items[start : start + per_page]


@problem(
    0.2,
    ("lists", "boundary"),
    [
        "count_in_range([], 0, 10) == 0",
        "count_in_range([1, 2, 3], 1, 3) == 2",
        "count_in_range([1, 2, 3], 0, 1) == 0",
        "count_in_range([5, 5, 5], 5, 6) == 3",
        "count_in_range([5, 5, 5], 4, 5) == 0",
        "count_in_range([-1, 0, 1], -1, 1) == 2",
        "count_in_range([1, 2, 3], 3, 1) == 0",
    ],
)
def count_in_range(numbers: list[int], low: int, high: int) -> int:
    """Count the numbers that satisfy low <= number < high."""
    return sum(1 for number in numbers if low <= number < high)


@problem(
    0.5,
    ("strings", "boundary"),
    [
        'is_valid_ipv4("192.168.0.1") == True',
        'is_valid_ipv4("0.0.0.0") == True',
        'is_valid_ipv4("255.255.255.255") == True',
        'is_valid_ipv4("256.0.0.1") == False',
        'is_valid_ipv4("1.2.3") == False',
        'is_valid_ipv4("01.2.3.4") == False',
        'is_valid_ipv4("1.2.3.4.5") == False',
        'is_valid_ipv4("1..3.4") == False',
        'is_valid_ipv4("a.b.c.d") == False',
    ],
)
def is_valid_ipv4(text: str) -> bool:
    """Return True if text is an IPv4 address: four decimal numbers from 0 to 255 separated by
    dots, without leading zeros (except for "0" itself).
    """
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part or not all(char in "0123456789" for char in part):
            return False
        if len(part) > 1 and part[0] == "0":
            return False
        if int(part) > 255:
            return False
    return True


# ================================================================================================
# Building and checking
# ================================================================================================


def to_problem(entry: Entry) -> Problem:
    """The bank record of one registered function, validated through the package schema."""
    name = entry.function.__name__
    lines = inspect.getsource(entry.function).splitlines()
    tree = ast.parse("\n".join(lines))
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef) and node.name == name
    docstring = node.body[0]
    assert isinstance(docstring, ast.Expr), f"{name} needs a docstring"
    assert docstring.end_lineno is not None
    header_start = node.lineno - 1  # skips the @problem decorator
    prompt = "\n".join(lines[header_start : docstring.end_lineno])
    solution = "\n".join(lines[header_start:])
    record = {
        "task_id": f"bank/{name}",
        "prompt": prompt,
        "entry_point": name,
        "canonical_solution": solution,
        "tests": list(entry.tests),
        "difficulty": entry.difficulty,
        "tags": list(entry.tags),
    }
    return problem_from_dict(record, where=f"scripts/build_bank.py:{name}")


def verify(problem: Problem) -> list[str]:
    """Run every GT test against the GT solution; return the failures."""
    failures = []
    for test in problem.tests:
        namespace: dict[str, Any] = {}
        exec(problem.canonical_solution, namespace)
        compare = ast.parse(test).body[0].test  # type: ignore[attr-defined]
        got = eval(ast.unparse(compare.left), namespace)
        expected = eval(ast.unparse(compare.comparators[0]), namespace)
        if not is_plain(got) or not values_equal(got, expected):
            failures.append(f"{problem.task_id}: {test} -> got {got!r}")
            continue
        try:
            exec(test, namespace)
        except AssertionError:
            failures.append(f"{problem.task_id}: {test} fails as a plain assert")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the bank is out of date")
    args = parser.parse_args(argv)
    problems = [to_problem(entry) for entry in BANK]
    failures = [failure for problem in problems for failure in verify(problem)]
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    if args.check:
        import json

        expected = "".join(
            json.dumps(problem_to_dict(p), ensure_ascii=False) + "\n" for p in problems
        )
        current = BANK_PATH.read_text(encoding="utf-8") if BANK_PATH.exists() else ""
        if current != expected:
            print(f"{BANK_PATH} is out of date: run scripts/build_bank.py", file=sys.stderr)
            return 1
        print(f"{BANK_PATH}: {len(problems)} problems, up to date")
        return 0
    count = write_problems(BANK_PATH, problems)
    print(f"wrote {count} problems to {BANK_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
