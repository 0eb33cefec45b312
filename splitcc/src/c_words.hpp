// c_words.hpp - the words of C (and GNU C) the parser classifies tokens by:
// type keywords, qualifiers, storage classes and the other keywords.
#pragma once

#include <string>
#include <unordered_set>

#include "lexer.hpp"

namespace splitcc {

inline const std::unordered_set<std::string> kTypeKeywords = {
    "void",        "char",        "short",
    "int",         "long",        "float",
    "double",      "signed",      "__signed",
    "__signed__",  "unsigned",    "_Bool",
    "_Complex",    "__complex__", "__complex",
    "__int128",    "__int128_t",  "__uint128_t",
    "_Float16",    "_Float32",    "_Float64",
    "_Float128",   "_Float32x",   "_Float64x",
    "_Float128x",  "__float128",  "__float80",
    "__ibm128",    "__bf16",      "_Decimal32",
    "_Decimal64",  "_Decimal128", "__builtin_va_list",
    "__auto_type", "struct",      "union",
    "enum",        "typeof",      "__typeof__",
    "__typeof",
};
inline const std::unordered_set<std::string> kQualifiers = {
    "const",    "__const",    "__const__",    "volatile", "__volatile", "__volatile__",
    "restrict", "__restrict", "__restrict__", "_Atomic",  "_Nonnull",   "_Nullable",
};
inline const std::unordered_set<std::string> kStorage = {
    "typedef",  "extern", "static",   "auto",       "register",  "_Thread_local",
    "__thread", "inline", "__inline", "__inline__", "_Noreturn", "__extension__",
};
inline const std::unordered_set<std::string> kKeywords = {
    "if",
    "else",
    "while",
    "do",
    "for",
    "switch",
    "case",
    "default",
    "break",
    "continue",
    "return",
    "goto",
    "sizeof",
    "_Alignof",
    "__alignof__",
    "__alignof",
    "asm",
    "__asm__",
    "__asm",
    "_Static_assert",
    "_Generic",
    "__attribute__",
    "__attribute",
    "__label__",
    "__real__",
    "__imag__",
    "__builtin_va_arg",
    "__builtin_offsetof",
    "__builtin_types_compatible_p",
    "_Alignas",
};
inline bool is_attr(const Token &t) {
    return t.kind == Tok::Ident && (t.text == "__attribute__" || t.text == "__attribute");
}

} // namespace splitcc
