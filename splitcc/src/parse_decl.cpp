// parse_decl.cpp - declaration specifiers (with records and enums) and
// declarations: initializers, function definitions, the translation unit.
// The token cursor is in parse_tokens.cpp, scopes in parse_scope.cpp,
// declarators in parse_declarator.cpp.
#include <algorithm>

#include "c_words.hpp"
#include "parser.hpp"

namespace splitcc {

// ---- declaration specifiers ------------------------------------------------------

void Parser::skip_attributes() {
    while (is_attr(peek()) || is("__extension__")) {
        if (is("__extension__")) {
            take();
            continue;
        }
        take();
        if (is("(")) skip_balanced();
    }
}

bool Parser::skip_asm_label() {
    if (is("asm") || is("__asm__") || is("__asm")) {
        take();
        if (is("(")) skip_balanced();
        return true;
    }
    return false;
}

// A declaration's specifiers: one word at a time (spec_word), then the type
// the words name (spec_type), as C's grammar lets them come in any order.
Specs Parser::specs(bool allow_storage) {
    Specs s;
    s.sb = tix();
    SpecWords c;
    while (spec_word(c, s, allow_storage)) {}
    s.se = prev_end();
    s.type = spec_type(c, s);
    return s;
}

// Consumes one specifier word into c (counts and base type) or s (storage,
// attributes); false at the first token that is not one.
bool Parser::spec_word(SpecWords &c, Specs &s, bool allow_storage) {
    const Token &t = peek();
    if (t.kind != Tok::Ident) return false;
    const std::string &w = t.text;
    if (kStorage.count(w)) {
        if (w == "typedef") s.is_typedef = true;
        else if (w == "extern") s.is_extern = true;
        else if (w == "static") s.is_static = true;
        else if (w == "inline" || w == "__inline" || w == "__inline__") s.is_inline = true;
        else if (w == "register") s.is_register = true;
        if (!allow_storage && w != "__extension__" && w != "register")
            diag_.error(t.loc, "storage class '" + w + "' is not allowed here");
        s.storage.push_back(tix());
        take();
        s.any = true;
        return true;
    }
    if (is_attr(t) || w == "_Alignas" || w == "__declspec") {
        int b = tix();
        take();
        if (is("(")) skip_balanced();
        for (int q = b; q < prev_end(); ++q) s.storage.push_back(q);
        return true;
    }
    if (kQualifiers.count(w)) {
        if (w == "_Atomic" && is("(", 1)) { // _Atomic(type)
            take();
            take();
            c.named = type_name();
            expect(")");
            s.any = true;
            return true;
        }
        if (w[0] == 'c' || w.find("const") != std::string::npos) c.quals |= QConst;
        else if (w.find("volatile") != std::string::npos) c.quals |= QVolatile;
        else if (w.find("restrict") != std::string::npos) c.quals |= QRestrict;
        take();
        s.any = true;
        return true;
    }
    if (w == "signed" || w == "__signed" || w == "__signed__") {
        ++c.nsigned;
        take();
        s.any = true;
        return true;
    }
    if (w == "unsigned") {
        ++c.nunsigned;
        take();
        s.any = true;
        return true;
    }
    if (w == "short") {
        ++c.nshort;
        take();
        s.any = true;
        return true;
    }
    if (w == "long") {
        ++c.nlong;
        take();
        s.any = true;
        return true;
    }
    if (w == "int") {
        ++c.nint;
        take();
        s.any = true;
        return true;
    }
    if (w == "char") {
        ++c.nchar;
        take();
        s.any = true;
        return true;
    }
    if (w == "_Complex" || w == "__complex__" || w == "__complex") {
        ++c.ncomplex;
        take();
        s.any = true;
        return true;
    }
    if (w == "__int128_t") {
        c.base = "__int128";
        take();
        s.any = true;
        return true;
    }
    if (w == "__uint128_t") {
        c.base = "__int128";
        ++c.nunsigned;
        take();
        s.any = true;
        return true;
    }
    if (kTypeKeywords.count(w) && w != "struct" && w != "union" && w != "enum" && w != "typeof" && w != "__typeof__" &&
        w != "__typeof") {
        c.base = w;
        take();
        s.any = true;
        return true;
    }
    if (w == "struct" || w == "union") {
        take();
        c.named = record_spec(w == "union", s);
        s.any = true;
        return true;
    }
    if (w == "enum") {
        take();
        c.named = enum_spec(s);
        s.any = true;
        return true;
    }
    if (w == "typeof" || w == "__typeof__" || w == "__typeof") {
        take();
        expect("(");
        if (starts_type()) {
            c.named = type_name();
        } else {
            Expr *e = expr();
            c.named = e->type;
            if (e->where != Where::Local || mentions_splitc(e->type))
                diag_.error(e->loc, "typeof of a global or spread expression is not supported");
        }
        expect(")");
        s.any = true;
        return true;
    }
    if (!c.have_type() && is_typedef_name(t)) {
        c.named = lookup(w)->type;
        take();
        s.any = true;
        return true;
    }
    return false;
}

Type *Parser::spec_type(const SpecWords &c, Specs &s) {
    Type *t = nullptr;
    if (c.named) {
        t = c.named;
    } else if (!c.base.empty()) {
        if (c.base == "void") t = ty_.builtin(TK::Void);
        else if (c.base == "float") t = ty_.builtin(TK::Float);
        else if (c.base == "double") t = ty_.builtin(c.nlong ? TK::LDouble : TK::Double);
        else if (c.base == "_Bool") t = ty_.builtin(TK::Bool);
        else if (c.base == "__int128") t = ty_.builtin(c.nunsigned ? TK::UInt128 : TK::Int128);
        else if (c.base == "__builtin_va_list") t = ty_.builtin(TK::VaList);
        else if (c.base == "__auto_type") t = ty_.builtin(TK::Int);
        else {
            Type o;
            o.kind = TK::OtherScalar;
            o.spelling = c.base;
            t = ty_.make(o);
        }
    } else if (c.nchar) {
        t = ty_.builtin(c.nunsigned ? TK::UChar : c.nsigned ? TK::SChar : TK::Char);
    } else if (c.nshort) {
        t = ty_.builtin(c.nunsigned ? TK::UShort : TK::Short);
    } else if (c.nlong >= 2) {
        t = ty_.builtin(c.nunsigned ? TK::ULLong : TK::LLong);
    } else if (c.nlong == 1) {
        t = ty_.builtin(c.nunsigned ? TK::ULong : TK::Long);
    } else if (c.nint || c.nsigned || c.nunsigned) {
        t = ty_.builtin(c.nunsigned ? TK::UInt : TK::Int);
    } else {
        t = ty_.builtin(TK::Int);
        s.implicit_int = true;
    }
    if (c.ncomplex) {
        Type o;
        o.kind = TK::OtherScalar;
        o.spelling = "_Complex " + t->spelling;
        t = ty_.make(o);
    }
    return ty_.qualified(t, c.quals);
}

Type *Parser::record_spec(bool is_union, Specs &s) {
    skip_attributes();
    std::string tag;
    Loc l = loc();
    if (peek().kind == Tok::Ident && !is("{")) tag = take().text;
    skip_attributes();
    Type *t = nullptr;
    if (!tag.empty()) {
        bool defining = is("{");
        bool fwd = is(";");
        for (int i = int(tags_.size()) - 1; i >= 0; --i) {
            auto f = tags_[i].find(tag);
            if (f != tags_[i].end()) {
                if ((defining || fwd) && i != int(tags_.size()) - 1) break; // a new tag in this scope
                t = f->second;
                break;
            }
        }
    }
    if (!t) {
        Record *r = ty_.record();
        r->is_union = is_union;
        r->tag = tag;
        r->loc = l;
        Type nt;
        nt.kind = is_union ? TK::Union : TK::Struct;
        nt.rec = r;
        t = ty_.make(nt);
        r->type = t;
        if (!tag.empty()) tags_.back()[tag] = t;
    }
    if (is("{")) {
        Record *r = t->rec;
        if (r->complete) {
            // A struct defined again (e.g. in a header included twice without a
            // guard): C reports it; we take the new body.
            r->fields.clear();
        }
        auto *body = own(new Node(NK::RecordBody));
        body->b = tix();
        take();
        while (!is("}") && !at_end()) {
            if (is("_Static_assert")) {
                take();
                skip_balanced();
                accept(";");
                continue;
            }
            Specs ms = specs(false);
            Decl *md = inner_declaration(ms, true);
            body->kids.push_back(md);
            for (InitDecl *d : md->decls) {
                Field f;
                f.name = d->name;
                f.type = d->type;
                f.bitfield = d->bitfield;
                r->fields.push_back(f);
            }
            if (md->decls.empty() && is_record(ms.type)) { // anonymous struct/union member
                Field f;
                f.type = ms.type;
                r->fields.push_back(f);
            }
        }
        expect("}");
        body->e = prev_end();
        r->complete = true;
        s.body = body;
        skip_attributes();
    }
    return t;
}

Type *Parser::enum_spec(Specs &s) {
    skip_attributes();
    std::string tag;
    if (peek().kind == Tok::Ident && !is("{")) tag = take().text;
    skip_attributes();
    Type *t = nullptr;
    if (!tag.empty()) {
        for (int i = int(tags_.size()) - 1; i >= 0 && !t; --i) {
            auto f = tags_[i].find(tag);
            if (f != tags_[i].end()) t = f->second;
        }
    }
    if (!t) {
        Record *r = ty_.record();
        r->tag = tag;
        Type nt;
        nt.kind = TK::Enum;
        nt.rec = r;
        nt.spelling = "int";
        t = ty_.make(nt);
        r->type = t;
        if (!tag.empty()) tags_.back()[tag] = t;
    }
    if (is("{")) {
        auto *body = own(new Node(NK::RecordBody));
        body->b = tix();
        take();
        while (!is("}") && !at_end()) {
            if (peek().kind != Tok::Ident) {
                diag_.error(loc(), "expected an enumerator name");
                skip_balanced();
                break;
            }
            Token &n = take();
            declare(n.text, SymKind::EnumConst, ty_.builtin(TK::Int), n.loc);
            skip_attributes();
            if (accept("=")) body->kids.push_back(cond_expr());
            if (!accept(",")) break;
        }
        expect("}");
        body->e = prev_end();
        t->rec->complete = true;
        s.body = body;
    }
    return t;
}

// ---- declarations ---------------------------------------------------------------------

void Parser::declare_from(InitDecl *d, Decl *decl, const Specs &s) {
    if (d->name.empty()) return;
    Type *t = d->type;
    if (s.is_typedef) {
        Type td;
        td.kind = TK::Typedef;
        td.name = d->name;
        td.target = t;
        // The runtime's handles are Split-C's untyped global and spread pointers.
        if (d->name == "splitc_gptr_t") td.target = ty_.void_global;
        if (d->name == "splitc_sptr_t") td.target = ty_.void_spread;
        Type *tt = ty_.make(td);
        if (is_record(t) && strip(t)->rec->tag.empty() && strip(t)->rec->typedef_name.empty())
            strip(t)->rec->typedef_name = d->name;
        d->sym = declare(d->name, SymKind::Typedef, tt, d->loc);
        return;
    }
    SymKind k = is_function(t) ? SymKind::Func : SymKind::Var;
    if (k == SymKind::Func && scopes_.size() > 1) {
        // A block-scope function declaration names the file-scope function.
        d->sym = declare(d->name, k, t, d->loc);
        return;
    }
    d->sym = declare(d->name, k, t, d->loc);
    d->sym->is_register = s.is_register;
    if (k == SymKind::Var && is_spread_array(t)) {
        d->sym->spread_var = true;
        if (scopes_.size() > 1 && (s.is_static || s.is_extern))
            diag_.error(d->loc,
                        "a spread array inside a function must be automatic (collective, released at the end "
                        "of its block): declare '" +
                            d->name + "' at file scope instead");
    }
    // PROCS is a run-time value: an array of static storage sized by it is
    // not C, and the C compiler's "variably modified at file scope" does not
    // say why.  (The runtime's variable is what PROCS expands to.)
    if (k == SymKind::Var && (scopes_.size() == 1 || s.is_static) && !is_spread_array(t)) {
        for (Type *a = strip(t); a && a->kind == TK::Array && !a->spread; a = strip(a->elem)) {
            bool procs = false;
            if (a->size)
                for (int i = a->size->b; i < a->size->e && i < (int)toks_.size(); ++i)
                    if (toks_[i].text == "splitc_rt_procs" || toks_[i].text == "splitc_procs") procs = true;
            if (procs) {
                diag_.error(d->loc,
                            "the extent of '" + d->name + "' uses PROCS, which is known only at run time, so '" +
                                d->name +
                                "' cannot have static storage: allocate it with malloc in splitc_main, "
                                "make it automatic, or make it a spread array ('[PROCS]::')");
                break;
            }
        }
    }
    // As in C, the first extent may be left out where no storage is made: an
    // extern declaration, or a K&R parameter (which is a spread pointer).
    if (is_spread_array(t) && !strip(t)->size && !s.is_extern && !knr_params_)
        diag_.error(d->loc, "spread array '" + d->name + "' needs the extent of its first dimension");
}

Node *Parser::declaration(Specs &s, bool file_scope, bool member) {
    auto *d = own(new Decl);
    d->b = s.sb;
    d->sb = s.sb;
    d->se = s.se;
    d->storage = s.storage;
    d->base = s.type;
    d->body = s.body;
    d->file_scope = file_scope;
    d->is_typedef = s.is_typedef;
    d->is_extern = s.is_extern;
    d->is_static = s.is_static;
    if (s.body) d->kids.push_back(s.body);
    if (!accept(";")) {
        for (;;) {
            auto *id = own(new InitDecl);
            id->b = tix();
            id->db = tix();
            std::vector<Param> fparams;
            pending_sizes_.clear();
            if (member && is(":")) {
                // unnamed bit-field
            } else {
                id->type = declarator(s.type, id->name, id->loc, member, &fparams);
            }
            for (Expr *e : pending_sizes_) id->kids.push_back(e);
            pending_sizes_.clear();
            if (member && accept(":")) {
                id->bitfield = true;
                Expr *w = cond_expr();
                id->kids.push_back(w);
                if (id->type && (is_gs_ptr(id->type) || !is_integer(id->type)))
                    diag_.error(id->loc, "bit-field '" + id->name + "' must have an integer type");
                id->sym = nullptr;
                if (!id->type) id->type = s.type;
            }
            skip_asm_label();
            skip_attributes();
            id->de = prev_end();
            if (!member) declare_from(id, d, s);
            if (id->type && mentions_splitc(id->type)) id->regen = true;
            if (file_scope && !member && id->type && is_function(id->type) && !s.is_typedef &&
                (is("{") || (starts_decl() && !strip(id->type)->prototyped))) {
                id->e = prev_end();
                d->decls.push_back(id);
                d->kids.push_back(id);
                return function_def(d, id, fparams, s);
            }
            if (accept("=")) {
                if (s.is_typedef) diag_.error(id->loc, "typedef '" + id->name + "' is initialized");
                if (id->type && is_spread_array(id->type))
                    diag_.error(id->loc, "spread array '" + id->name + "' cannot have an initializer");
                id->init = initializer(id->type);
                id->kids.push_back(id->init);
                // Static storage is initialized before MYPROC is known.
                auto *ie = id->init->nk == NK::Expr ? static_cast<Expr *>(id->init) : nullptr;
                if (ie && ie->ek == EK::Conv && ie->op == "conv" && !is_gs_ptr(ie->a->type) &&
                    (file_scope || s.is_static))
                    diag_.error(ie->loc,
                                "'" + id->name +
                                    "' has static storage: it cannot be initialized with a local "
                                    "address, which becomes global only when MYPROC is known; assign it at run time "
                                    "(e.g. in splitc_main)");
            }
            id->e = prev_end();
            d->decls.push_back(id);
            d->kids.push_back(id);
            if (!accept(",")) break;
        }
        expect(";", "after the declaration");
    }
    if (member && !d->decls.empty() && !d->decls.back()->type) d->decls.back()->type = s.type;
    d->e = prev_end();
    return d;
}

Node *Parser::initializer(Type *t) {
    if (!is("{")) {
        Expr *e = assign_expr();
        if (e->ek == EK::Literal && toks_[e->b].kind == Tok::String && is_array(t)) return e;
        return convert_init(rvalue(e), t);
    }
    auto *il = own(new InitList);
    il->b = tix();
    il->type = t;
    take();
    Type *st = strip(t);
    size_t field = 0;
    while (!is("}") && !at_end()) {
        Type *target = nullptr;
        bool designated = false;
        // Designators: .name, [index], [a ... b], and the old GNU "name:".
        for (;;) {
            if (is(".") && peek(1).kind == Tok::Ident) {
                take();
                std::string n = take().text;
                designated = true;
                Type *cur = target ? strip(target) : st;
                if (cur && is_record(cur)) {
                    Record *r = cur->rec;
                    for (size_t i = 0; i < r->fields.size(); ++i)
                        if (r->fields[i].name == n) {
                            if (!target) field = i;
                            target = r->fields[i].type;
                        }
                }
            } else if (is("[")) {
                take();
                cond_expr();
                if (accept("...")) cond_expr();
                expect("]");
                designated = true;
                Type *cur = target ? strip(target) : st;
                target = cur && cur->kind == TK::Array ? cur->elem : nullptr;
            } else if (peek().kind == Tok::Ident && is(":", 1) && !designated) {
                std::string n = take().text;
                take();
                if (st && is_record(st))
                    for (size_t i = 0; i < st->rec->fields.size(); ++i)
                        if (st->rec->fields[i].name == n) {
                            field = i;
                            target = st->rec->fields[i].type;
                        }
                designated = false;
                break;
            } else {
                break;
            }
        }
        if (designated) accept("=");
        if (!target && st) {
            if (st->kind == TK::Array) target = st->elem;
            else if (is_record(st) && field < st->rec->fields.size()) target = st->rec->fields[field].type;
        }
        Node *el = initializer(target ? target : ty_.builtin(TK::Int));
        il->elems.push_back(el);
        il->kids.push_back(el);
        ++field;
        if (!accept(",")) break;
    }
    expect("}");
    il->e = prev_end();
    return il;
}

Expr *Parser::convert_init(Expr *e, Type *t) {
    if (!t) return e;
    return convert(e, t, "initialization");
}

Node *Parser::function_def(Decl *decl, InitDecl *d, std::vector<Param> &fparams, Specs &s) {
    auto *f = own(new FuncDef);
    f->b = decl->b;
    f->decl = decl;
    f->d = d;
    f->sym = d->sym;
    f->implicit_int = s.implicit_int;
    decl->e = d->de;
    decl->funcdef = true;
    f->kids.push_back(decl);
    Type *ft = strip(d->type);
    push_scope();
    // Old-style parameter declarations.
    std::vector<Param> params = fparams;
    while (!is("{") && !at_end()) {
        Specs ks = specs(true);
        if (!ks.any) {
            diag_.error(loc(), "expected a parameter declaration or '{' before '" + peek().text + "'");
            while (!at_end() && !is("{")) take();
            break;
        }
        knr_params_ = true;
        Decl *kd = inner_declaration(ks);
        knr_params_ = false;
        for (InitDecl *id : kd->decls) {
            bool found = false;
            for (Param &p : params)
                if (p.name == id->name) {
                    Type *st = strip(id->type);
                    p.type = st->kind == TK::Array
                        ? ty_.pointer(st->elem, st->spread ? PtrKind::Spread : PtrKind::Local)
                        : id->type;
                    // A spread array parameter is declared as the spread
                    // pointer it is (its prototype spelling does the same).
                    if (st->kind == TK::Array && st->spread) {
                        id->type = p.type;
                        id->regen = true;
                    }
                    found = true;
                }
            if (!found) diag_.error(id->loc, "declaration of '" + id->name + "' which is not a parameter");
            if (id->sym) {
                id->sym->is_param = true;
                id->sym->spread_var = false;
                for (Param &p : params)
                    if (p.name == id->name) id->sym->type = p.type;
            }
        }
        f->knr.push_back(kd);
        f->kids.push_back(kd);
    }
    if (!ft->prototyped && !f->knr.empty()) {
        // Calls later in this file convert their arguments as if prototyped
        // (a global pointer parameter must receive a global pointer).
        Type nt = *ft;
        nt.params = params;
        nt.prototyped = false;
        Type *copy = ty_.make(nt);
        copy->variadic = false;
        copy->spelling = "knr";
        if (d->sym) d->sym->type = copy;
        ft = copy;
    }
    for (Param &p : params) {
        if (p.name.empty()) continue;
        Symbol *sym = lookup(p.name);
        if (!sym || !sym->is_param || scopes_.back().find(p.name) == scopes_.back().end()) {
            sym = declare(p.name, SymKind::Var, p.type, d->loc);
            sym->is_param = true;
        }
        f->params.push_back(sym);
    }
    Type *saved = cur_ret_;
    cur_ret_ = ft->ret;
    if (peek().sys) {
        f->sys = true;
        int b = tix();
        skip_balanced();
        auto *blk = own(new Block);
        blk->b = b;
        blk->e = prev_end();
        f->body = blk;
    } else {
        f->body = compound(false);
    }
    f->kids.push_back(f->body);
    cur_ret_ = saved;
    pop_scope();
    f->e = prev_end();
    return f;
}

Node *Parser::external_decl() {
    if (is(";")) { // stray semicolon at file scope
        auto *n = own(new Node(NK::Stmt));
        n->b = tix();
        take();
        n->e = prev_end();
        return n;
    }
    if (is("_Static_assert") || skip_asm_label()) {
        auto *n = own(new Node(NK::Stmt));
        n->b = tix();
        if (is("_Static_assert")) {
            take();
            skip_balanced();
        }
        accept(";");
        n->e = prev_end();
        return n;
    }
    int b = tix();
    Specs s = specs(true);
    if (!s.any && !(peek().kind == Tok::Ident || is("*") || is("("))) {
        diag_.error(loc(), "expected a declaration before '" + peek().text + "'");
        take();
        auto *n = own(new Node(NK::Stmt));
        n->b = b;
        n->e = prev_end();
        return n;
    }
    if (!s.any) s.sb = b;
    return declaration(s, true);
}

Node *Parser::parse_unit() {
    auto *u = own(new Node(NK::Unit));
    u->b = 0;
    try {
        while (!at_end()) {
            size_t before = p_;
            Node *n = external_decl();
            if (n) u->kids.push_back(n);
            if (p_ == before) take();
        }
    } catch (TooManyErrors &) {}
    u->e = int(toks_.size()) - 1; // the End token is not written
    return u;
}

} // namespace splitcc