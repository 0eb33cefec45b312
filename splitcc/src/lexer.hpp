// lexer.hpp - tokens of preprocessed Split-C.  The input is the output of the
// system C preprocessor; its line markers set each token's source position and
// whether it comes from a system header.  Split-C adds three punctuators to C:
// "::" (spread array declarators), ":=" (split-phase assignment) and ":-"
// (signalling store).
#pragma once

#include <string>
#include <vector>

#include "diag.hpp"

namespace splitcc {

enum class Tok { Ident, Number, Char, String, Punct, Pragma, End };

struct Token {
    Tok kind = Tok::End;
    std::string text;
    Loc loc;
    bool space_before = false; // whitespace preceded it on its line
    bool line_start = false;   // first token of a line
    bool sys = false;          // from a system header (line marker flag 3)
    bool is(const char *s) const { return (kind == Tok::Punct || kind == Tok::Ident) && text == s; }
};

// Tokenizes `text` (preprocessor output).  `primary` names the file reported
// before the first line marker.  Lexical problems are reported through `diag`.
std::vector<Token> lex(const std::string &text, const std::string &primary, Diag &diag);

} // namespace splitcc
