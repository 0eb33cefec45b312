// lexer.cpp - see lexer.hpp.
#include "lexer.hpp"

#include <cctype>
#include <cstring>

namespace splitcc {

namespace {

bool ident_start(char c) { return std::isalpha((unsigned char)c) || c == '_' || c == '$'; }
bool ident_char(char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '$'; }

// Longest punctuators first.
const char *const kPuncts[] = {
    "...", "<<=", ">>=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||",  "*=",  "/=",  "%=", "+=", "-=", "&=", "^=", "|=", "::", ":=", ":-", "##",
};

class Lexer {
public:
    Lexer(const std::string &t, const std::string &primary, Diag &d) : s(t), diag(d) {
        file = diag.file_index(primary);
    }

    std::vector<Token> run() {
        std::vector<Token> out;
        out.reserve(s.size() / 4);
        bool space = false, start = true;
        while (i < s.size()) {
            char c = s[i];
            if (c == '\n') {
                ++i;
                ++line;
                line_begin = i;
                space = false;
                start = true;
                continue;
            }
            if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
                ++i;
                space = true;
                continue;
            }
            if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') { // stray continuation
                i += 2;
                ++line;
                line_begin = i;
                continue;
            }
            if (c == '#' && start) {
                directive(out);
                continue;
            }
            Token t;
            t.loc = Loc{file, line, int(i - line_begin) + 1};
            t.space_before = space;
            t.line_start = start;
            t.sys = sys;
            space = false;
            start = false;
            if (ident_start(c)) {
                size_t b = i;
                while (i < s.size() && ident_char(s[i])) ++i;
                // String and character prefixes: L"", u8"", u'', U''.
                std::string id = s.substr(b, i - b);
                if (i < s.size() && (s[i] == '"' || s[i] == '\'') &&
                    (id == "L" || id == "u" || id == "U" || id == "u8")) {
                    quoted(t, s[i], b);
                } else {
                    t.kind = Tok::Ident;
                    t.text = std::move(id);
                }
            } else if (std::isdigit((unsigned char)c) ||
                       (c == '.' && i + 1 < s.size() && std::isdigit((unsigned char)s[i + 1]))) {
                size_t b = i;
                ++i;
                while (i < s.size()) {
                    char d = s[i];
                    if ((d == '+' || d == '-') &&
                        (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
                        ++i;
                        continue;
                    }
                    if (ident_char(d) || d == '.') {
                        ++i;
                        continue;
                    }
                    break;
                }
                t.kind = Tok::Number;
                t.text = s.substr(b, i - b);
            } else if (c == '"' || c == '\'') {
                quoted(t, c, i);
            } else {
                t.kind = Tok::Punct;
                bool found = false;
                for (const char *p : kPuncts) {
                    size_t n = std::strlen(p);
                    if (s.compare(i, n, p) == 0) {
                        t.text = p;
                        i += n;
                        found = true;
                        break;
                    }
                }
                if (!found) {
                    t.text = std::string(1, c);
                    ++i;
                    if (!std::strchr("{}[]();,.<>+-*/%&|^!~?:=#@", c))
                        diag.error(t.loc, std::string("stray character '") + c + "' in program");
                }
            }
            out.push_back(std::move(t));
        }
        Token e;
        e.kind = Tok::End;
        e.loc = Loc{file, line, 1};
        e.line_start = true;
        out.push_back(e);
        return out;
    }

private:
    const std::string &s;
    Diag &diag;
    size_t i = 0;
    size_t line_begin = 0;
    int file = 0;
    int line = 1;
    bool sys = false;

    // A string or character literal starting at s[i] (== q); `b` is where the
    // token (with its prefix) starts.  A raw newline inside a string literal is
    // 1990s C (old compilers accepted it): it becomes "\n" and a warning.
    void quoted(Token &t, char q, size_t b) {
        t.kind = q == '"' ? Tok::String : Tok::Char;
        std::string text = s.substr(b, i - b);
        text += q;
        ++i;
        while (i < s.size() && s[i] != q) {
            if (s[i] == '\\' && i + 1 < s.size()) {
                if (s[i + 1] == '\n') { // continuation left by the preprocessor
                    i += 2;
                    ++line;
                    line_begin = i;
                    continue;
                }
                text += s[i];
                text += s[i + 1];
                i += 2;
                continue;
            }
            if (s[i] == '\n') {
                if (q == '\'') break;
                diag.warning(Loc{file, line, int(i - line_begin) + 1},
                             "newline in string literal (1990s C): kept as \\n");
                text += "\\n";
                ++i;
                ++line;
                line_begin = i;
                continue;
            }
            text += s[i++];
        }
        if (i >= s.size() || s[i] != q) {
            diag.error(t.loc, q == '"' ? "missing terminating \" character" : "missing terminating ' character");
        } else {
            ++i;
        }
        text += q;
        t.text = std::move(text);
    }

    // "# 12 "file" flags" and "#line 12 "file"" set the position; "#pragma"
    // lines are kept as one token to be written back; anything else is skipped.
    void directive(std::vector<Token> &out) {
        size_t b = i;
        size_t e = s.find('\n', i);
        if (e == std::string::npos) e = s.size();
        std::string d = s.substr(b + 1, e - b - 1);
        size_t p = 0;
        while (p < d.size() && (d[p] == ' ' || d[p] == '\t')) ++p;
        if (d.compare(p, 4, "line") == 0) p += 4;
        while (p < d.size() && (d[p] == ' ' || d[p] == '\t')) ++p;
        if (p < d.size() && std::isdigit((unsigned char)d[p])) {
            int n = 0;
            while (p < d.size() && std::isdigit((unsigned char)d[p])) n = n * 10 + (d[p++] - '0');
            while (p < d.size() && d[p] == ' ') ++p;
            if (p < d.size() && d[p] == '"') {
                size_t q = p + 1;
                std::string name;
                while (q < d.size() && d[q] != '"') {
                    if (d[q] == '\\' && q + 1 < d.size()) ++q;
                    name += d[q++];
                }
                file = diag.file_index(name);
                std::string flags = q + 1 < d.size() ? d.substr(q + 1) : "";
                sys = flags.find('3') != std::string::npos;
            }
            line = n;
            i = e < s.size() ? e + 1 : e;
            line_begin = i;
            return;
        }
        if (d.compare(p, 6, "pragma") == 0) {
            Token t;
            t.kind = Tok::Pragma;
            t.text = "#" + d;
            t.loc = Loc{file, line, 1};
            t.line_start = true;
            t.sys = sys;
            out.push_back(std::move(t));
        }
        i = e < s.size() ? e + 1 : e;
        ++line;
        line_begin = i;
    }
};

} // namespace

std::vector<Token> lex(const std::string &text, const std::string &primary, Diag &diag) {
    return Lexer(text, primary, diag).run();
}

} // namespace splitcc
