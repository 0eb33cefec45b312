// parse_tokens.cpp - the parser's token cursor: look ahead, take, expect
// with recovery, and the token splits C's grammar needs.
#include <algorithm>

#include "parser.hpp"

namespace splitcc {

Parser::Parser(std::vector<Token> &toks, Types &types, Diag &diag) : toks_(toks), ty_(types), diag_(diag) {
    for (size_t i = 0; i < toks_.size(); ++i)
        if (toks_[i].kind != Tok::Pragma) ix_.push_back(int(i));
    scopes_.emplace_back();
    tags_.emplace_back();
}

const Token &Parser::peek(int k) const {
    size_t q = std::min(p_ + size_t(k), ix_.size() - 1);
    return toks_[ix_[q]];
}
int Parser::tix(int k) const { return ix_[std::min(p_ + size_t(k), ix_.size() - 1)]; }
int Parser::prev_end() const { return p_ == 0 ? 0 : ix_[p_ - 1] + 1; }
Token &Parser::take() {
    Token &t = toks_[ix_[p_]];
    if (p_ + 1 < ix_.size()) ++p_;
    return t;
}
bool Parser::accept(const char *s) {
    if (!is(s)) return false;
    take();
    return true;
}
void Parser::expect(const char *s, const char *what) {
    if (accept(s)) return;
    const Token &t = peek();
    std::string got = t.kind == Tok::End ? "end of file" : "'" + t.text + "'";
    diag_.error(t.loc, std::string("expected '") + s + "'" + (what ? std::string(" ") + what : "") + " before " + got);
    // Recover: skip to something that can follow.
    while (!at_end() && !is(s) && !is(";") && !is("}")) {
        if (is("(") || is("[") || is("{")) skip_balanced();
        else take();
    }
    accept(s);
}

// "a ? b :-1" lexes ":-" (Split-C's store): where C wants a ':' the token is
// split back into ':' and the rest.
void Parser::expect_colon() {
    const Token &t = peek();
    if (t.kind == Tok::Punct && t.text.size() == 2 && t.text[0] == ':') {
        int ti = tix();
        Token rest = toks_[ti];
        rest.text = t.text.substr(1);
        rest.loc.col += 1;
        rest.space_before = false;
        toks_[ti].text = ":";
        toks_.insert(toks_.begin() + ti + 1, rest);
        for (size_t q = p_ + 1; q < ix_.size(); ++q) ++ix_[q];
        ix_.insert(ix_.begin() + p_ + 1, ti + 1);
    }
    expect(":");
}

void Parser::skip_balanced() {
    int depth = 0;
    do {
        const Token &t = peek();
        if (t.kind == Tok::End) return;
        if (t.kind == Tok::Punct && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
        if (t.kind == Tok::Punct && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
        take();
    } while (depth > 0);
}
} // namespace splitcc
