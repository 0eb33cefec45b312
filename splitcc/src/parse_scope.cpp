// parse_scope.cpp - the parser's scopes: ordinary identifiers and tags by
// block, declaration and lookup, and what a name starts (a type, a declaration).
#include "c_words.hpp"
#include "parser.hpp"

namespace splitcc {

void Parser::push_scope() {
    scopes_.emplace_back();
    tags_.emplace_back();
}
void Parser::pop_scope() {
    scopes_.pop_back();
    tags_.pop_back();
}
Symbol *Parser::lookup(const std::string &name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
        auto f = it->find(name);
        if (f != it->end()) return f->second;
    }
    return nullptr;
}
Symbol *Parser::declare(const std::string &name, SymKind k, Type *t, Loc l) {
    auto &sc = scopes_.back();
    auto f = sc.find(name);
    if (f != sc.end() && f->second->kind == k) {
        Symbol *s = f->second;
        // A redeclaration: keep the more complete type (array size, prototype).
        Type *old = strip(s->type), *nw = strip(t);
        if (old && nw && old->kind == TK::Array && nw->kind == TK::Array && !nw->size) return s;
        if (old && nw && old->kind == TK::Function && nw->kind == TK::Function && old->prototyped && !nw->prototyped)
            return s;
        s->type = t;
        return s;
    }
    Symbol *s = new_symbol();
    s->name = name;
    s->kind = k;
    s->type = t;
    s->loc = l;
    s->file_scope = scopes_.size() == 1;
    sc[name] = s;
    return s;
}
bool Parser::is_typedef_name(const Token &t) const {
    if (t.kind != Tok::Ident) return false;
    Symbol *s = lookup(t.text);
    return s && s->kind == SymKind::Typedef;
}
bool Parser::starts_type(int k) const {
    const Token &t = peek(k);
    if (t.kind != Tok::Ident) return false;
    return kTypeKeywords.count(t.text) || kQualifiers.count(t.text) || is_typedef_name(t) || is_attr(t) ||
        t.text == "_Alignas";
}
bool Parser::starts_decl(int k) const {
    const Token &t = peek(k);
    if (t.kind != Tok::Ident) return false;
    if (t.text == "__extension__") return starts_decl(k + 1) || starts_type(k + 1);
    return starts_type(k) || kStorage.count(t.text) || t.text == "_Static_assert";
}

} // namespace splitcc
