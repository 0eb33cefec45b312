// parse_declarator.cpp - declarators: pointers, arrays, functions and their
// parameters around a name (or none, in a type name).
#include "c_words.hpp"
#include "parser.hpp"

namespace splitcc {

namespace {
// Replaces the placeholder at the bottom of a nested declarator's type.
void substitute(Type *t, Type *ph, Type *with) {
    for (int guard = 0; t && guard < 256; ++guard) {
        Type **next = nullptr;
        if (t->kind == TK::Pointer) next = &t->pointee;
        else if (t->kind == TK::Array) next = &t->elem;
        else if (t->kind == TK::Function) next = &t->ret;
        if (!next) return;
        if (*next == ph) {
            *next = with;
            return;
        }
        t = *next;
    }
}
} // namespace

Type *Parser::declarator(Type *base, std::string &name, Loc &nloc, bool abstract_ok, std::vector<Param> *fparams) {
    skip_attributes();
    while (is("*") || is("^")) {
        take();
        PtrKind pk = PtrKind::Local;
        unsigned quals = 0;
        for (;;) {
            const Token &t = peek();
            if (t.kind != Tok::Ident) break;
            if (t.text == "global") {
                pk = PtrKind::Global;
                take();
                continue;
            }
            if (t.text == "spread") {
                pk = PtrKind::Spread;
                take();
                continue;
            }
            if (kQualifiers.count(t.text)) {
                if (t.text.find("const") != std::string::npos) quals |= QConst;
                else if (t.text.find("volatile") != std::string::npos) quals |= QVolatile;
                else if (t.text.find("restrict") != std::string::npos) quals |= QRestrict;
                take();
                continue;
            }
            if (is_attr(t)) {
                skip_attributes();
                continue;
            }
            break;
        }
        base = ty_.pointer(base, pk, quals);
    }
    return direct_declarator(base, name, nloc, abstract_ok, fparams);
}

Type *Parser::direct_declarator(Type *base, std::string &name, Loc &nloc, bool abstract_ok,
                                std::vector<Param> *fparams) {
    skip_attributes();
    if (is("(")) {
        const Token &n = peek(1);
        bool nested = n.is("*") || n.is("^") || n.is("(") || is_attr(n) ||
            (n.kind == Tok::Ident && !is_typedef_name(n) && !kTypeKeywords.count(n.text) &&
             !kQualifiers.count(n.text) && !abstract_ok) ||
            (n.kind == Tok::Ident && abstract_ok && !starts_type(1) && !is(")", 2) && !is(",", 2));
        if (nested && !(abstract_ok && n.is(")"))) {
            take();
            Type ph;
            ph.kind = TK::Void;
            Type *phl = ty_.make(ph);
            std::vector<Param> inner_params;
            Type *inner = declarator(phl, name, nloc, abstract_ok, &inner_params);
            expect(")");
            std::vector<Param> outer_params;
            Type *outer = suffixes(base, &outer_params);
            if (fparams)
                *fparams = !inner_params.empty() || strip(inner)->kind == TK::Function ? inner_params : outer_params;
            if (inner == phl) return outer;
            substitute(inner, phl, outer);
            return inner;
        }
    }
    if (peek().kind == Tok::Ident && !kKeywords.count(peek().text) && !(abstract_ok && is_typedef_name(peek()))) {
        nloc = loc();
        name = take().text;
    } else if (!abstract_ok) {
        const Token &t = peek();
        diag_.error(t.loc, "expected a declarator name before '" + t.text + "'");
    }
    return suffixes(base, fparams);
}

Type *Parser::suffixes(Type *base, std::vector<Param> *fparams) {
    struct Suf {
        Type *fn = nullptr;
        Expr *size = nullptr;
        bool spread = false;
        bool is_fn = false;
    };
    std::vector<Suf> list;
    bool got_params = false;
    for (;;) {
        if (is("[")) {
            take();
            while (is("static") || kQualifiers.count(peek().text)) take();
            Suf s;
            if (is("*") && is("]", 1)) take();
            else if (!is("]")) {
                s.size = rvalue(assign_expr());
                pending_sizes_.push_back(s.size);
            }
            expect("]");
            list.push_back(s);
        } else if (is("(")) {
            Suf s;
            s.is_fn = true;
            std::vector<Param> ps;
            s.fn = param_list(nullptr, &ps);
            if (fparams && !got_params) {
                *fparams = ps;
                got_params = true;
            }
            list.push_back(s);
        } else if (is("::")) {
            Loc l = loc();
            take();
            bool any = false;
            for (Suf &s : list) {
                if (s.is_fn) break;
                if (!s.spread) {
                    s.spread = true;
                    any = true;
                }
            }
            if (!any)
                diag_.error(l, "'::' must follow the spread dimensions of an array declarator, as in 'int A[n]::[m]'");
        } else {
            break;
        }
    }
    Type *t = base;
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
        if (it->is_fn) {
            it->fn->ret = t;
            t = it->fn;
        } else {
            t = ty_.array(t, it->size, it->spread);
        }
    }
    return t;
}

Type *Parser::param_list(Type *ret, std::vector<Param> *fparams) {
    Type ft;
    ft.kind = TK::Function;
    ft.ret = ret;
    take(); // (
    push_scope();
    if (is(")")) {
        ft.prototyped = false;
    } else if (is("void") && is(")", 1)) {
        take();
        ft.prototyped = true;
    } else if (peek().kind == Tok::Ident && !starts_decl() && (is(",", 1) || is(")", 1))) {
        // K&R identifier list: the types come from the declarations that follow.
        ft.prototyped = false;
        while (peek().kind == Tok::Ident) {
            Param p;
            p.name = take().text;
            p.type = ty_.builtin(TK::Int);
            ft.params.push_back(p);
            if (!accept(",")) break;
        }
    } else {
        ft.prototyped = true;
        for (;;) {
            if (accept("...")) {
                ft.variadic = true;
                break;
            }
            Specs ps = specs(true);
            if (!ps.any) {
                diag_.error(loc(), "expected a parameter declaration before '" + peek().text + "'");
                while (!at_end() && !is(")")) skip_balanced();
                break;
            }
            Param p;
            Loc nl = loc();
            p.type = declarator(ps.type, p.name, nl, true);
            skip_attributes();
            // Parameters of array type are pointers; a spread array parameter
            // is a spread pointer to its first spread element.
            Type *st = strip(p.type);
            if (st->kind == TK::Array) p.type = ty_.pointer(st->elem, st->spread ? PtrKind::Spread : PtrKind::Local);
            else if (st->kind == TK::Function) p.type = ty_.pointer(p.type, PtrKind::Local);
            if (!p.name.empty()) {
                Symbol *sym = declare(p.name, SymKind::Var, p.type, nl);
                sym->is_param = true;
            }
            ft.params.push_back(p);
            if (!accept(",")) break;
        }
    }
    pop_scope();
    expect(")");
    if (fparams) *fparams = ft.params;
    return ty_.make(ft);
}

Type *Parser::type_name(int *tb, int *te) {
    int b = tix();
    Specs s = specs(false);
    std::string name;
    Loc l;
    Type *t = declarator(s.type, name, l, true);
    if (!name.empty()) diag_.error(l, "unexpected name '" + name + "' in a type name");
    if (tb) *tb = b;
    if (te) *te = prev_end();
    return t;
}

} // namespace splitcc
