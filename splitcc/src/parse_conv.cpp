// parse_conv.cpp - expression nodes and their types: rvalues (arrays and
// functions decay, remote lvalues are loaded), implicit conversions (global
// and spread pointers included), the usual arithmetic conversions, literal types.
#include <algorithm>
#include <cstring>

#include "parser.hpp"

namespace splitcc {

Expr *Parser::mk(EK k, int b, Loc l) {
    auto *e = own(new Expr(k));
    e->b = b;
    e->loc = l;
    return e;
}

void Parser::fin(Expr *e) {
    e->e = std::max(e->e, prev_end());
    std::vector<Expr *> ks;
    if (e->a) ks.push_back(e->a);
    if (e->c) ks.push_back(e->c);
    if (e->x) ks.push_back(e->x);
    for (Expr *a : e->args) ks.push_back(a);
    std::sort(ks.begin(), ks.end(), [](Expr *p, Expr *q) { return p->b < q->b; });
    for (Expr *k : ks) e->kids.push_back(k);
}

Expr *Parser::wrap(EK k, Expr *inner, Type *t, const char *op) {
    auto *w = own(new Expr(k));
    w->b = inner->b;
    w->e = inner->e;
    w->loc = inner->loc;
    w->a = inner;
    w->type = t;
    w->op = op;
    w->kids.push_back(inner);
    w->dirty = true;
    return w;
}

Expr *Parser::rvalue(Expr *e) {
    Type *st = strip(e->type);
    if (!st) return e;
    if (st->kind == TK::Array) {
        if (e->where == Where::Local) {
            auto *w = wrap(EK::Conv, e, ty_.pointer(st->elem, PtrKind::Local), "decay");
            w->dirty = false;
            return w;
        }
        PtrKind pk = e->where == Where::Spread && st->spread ? PtrKind::Spread : PtrKind::Global;
        return wrap(EK::Conv, e, ty_.pointer(st->elem, pk), "decay");
    }
    if (st->kind == TK::Function) {
        auto *w = wrap(EK::Conv, e, ty_.pointer(e->type, PtrKind::Local), "decay");
        w->dirty = false;
        return w;
    }
    if (e->where != Where::Local) {
        if (is_void(e->type)) diag_.error(e->loc, "a global or spread pointer to void cannot be dereferenced");
        return wrap(EK::Conv, e, e->type, "load");
    }
    return e;
}

bool Parser::null_const(Expr *e) const {
    while (e && (e->ek == EK::Paren || (e->ek == EK::Conv && !e->dirty))) e = e->a;
    if (!e) return false;
    if (e->ek == EK::Literal) {
        const std::string &t = toks_[e->b].text;
        if (toks_[e->b].kind != Tok::Number) return false;
        for (char c : t)
            if (c != '0' && c != 'x' && c != 'X' && c != 'l' && c != 'L' && c != 'u' && c != 'U') return false;
        return true;
    }
    if (e->ek == EK::Cast && is_pointer(e->tname) && is_void(strip(e->tname)->pointee)) return null_const(e->a);
    return false;
}

Expr *Parser::convert(Expr *e, Type *to, const char *ctx) {
    if (!to || !e->type) return e;
    Type *F = strip(e->type), *T = strip(to);
    if (!F || !T) return e;
    if (T->kind == TK::Pointer && T->pk != PtrKind::Local) {
        if (F->kind == TK::Pointer && F->pk == T->pk) return e;
        if (F->kind == TK::Pointer && F->pk != PtrKind::Local) return wrap(EK::Conv, e, to, "conv");
        if (null_const(e)) return wrap(EK::Conv, e, to, "null");
        if (F->kind == TK::Pointer) {
            if (T->pk == PtrKind::Spread) {
                diag_.error(e->loc,
                            std::string("a local pointer cannot become a spread pointer in ") + ctx +
                                " (spread pointers point into spread arrays; use toglobal() for a global pointer)");
                return e;
            }
            return wrap(EK::Conv, e, to, "conv"); // local -> global: this processor's address
        }
        if (is_integer(F)) {
            diag_.error(e->loc,
                        std::string("an integer cannot be converted to '") + describe(to) + "' in " + ctx +
                            " (only the constant 0 is a null global pointer)");
            return e;
        }
        if (F->kind != TK::Int || !e->sym) // int is also the type of undeclared names (already reported)
            diag_.error(e->loc,
                        std::string("'") + describe(e->type) + "' cannot be converted to '" + describe(to) + "' in " +
                            ctx);
        return e;
    }
    if (F->kind == TK::Pointer && F->pk != PtrKind::Local) {
        if (T->kind == TK::Bool) {
            auto *w = wrap(EK::ToBool, e, ty_.builtin(TK::Int), "");
            return w;
        }
        if (T->kind == TK::Pointer)
            diag_.error(e->loc,
                        std::string("a '") + describe(e->type) + "' does not convert to the local pointer '" +
                            describe(to) + "' in " + ctx +
                            ": cast it, or use tolocal(), when the data is on this processor");
        else
            diag_.error(e->loc,
                        std::string("a '") + describe(e->type) + "' cannot be converted to '" + describe(to) + "' in " +
                            ctx);
    }
    return e;
}

Expr *Parser::condition(Expr *e) {
    e = rvalue(e);
    if (is_gs_ptr(e->type)) return wrap(EK::ToBool, e, ty_.builtin(TK::Int), "");
    return e;
}

Type *Parser::arith_result(Type *a, Type *b) {
    Type *A = strip(a), *B = strip(b);
    if (!A || !B) return ty_.builtin(TK::Int);
    if (A->kind == TK::OtherScalar) return A;
    if (B->kind == TK::OtherScalar) return B;
    auto rank = [](Type *t) {
        switch (t->kind) {
        case TK::LDouble: return 20;
        case TK::Double: return 19;
        case TK::Float: return 18;
        case TK::UInt128: return 17;
        case TK::Int128: return 16;
        case TK::ULLong: return 15;
        case TK::LLong: return 14;
        case TK::ULong: return 13;
        case TK::Long: return 12;
        case TK::UInt: return 11;
        default: return 10; // promoted to int
        }
    };
    Type *w = rank(A) >= rank(B) ? A : B;
    if (rank(w) == 10) return ty_.builtin(TK::Int);
    return ty_.builtin(w->kind);
}

Type *Parser::literal_type(const Token &t) {
    if (t.kind == Tok::Char) return ty_.builtin(TK::Int);
    const std::string &s = t.text;
    bool hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    bool flt = s.find('.') != std::string::npos ||
        (!hex && (s.find('e') != std::string::npos || s.find('E') != std::string::npos)) ||
        (hex && (s.find('p') != std::string::npos || s.find('P') != std::string::npos));
    char last = char(std::tolower((unsigned char)s.back()));
    if (flt) {
        if (last == 'f' && !hex) return ty_.builtin(TK::Float);
        if (last == 'l') return ty_.builtin(TK::LDouble);
        return ty_.builtin(TK::Double);
    }
    int nl = 0;
    bool u = false;
    for (char c : s) {
        if (c == 'l' || c == 'L') ++nl;
        if (c == 'u' || c == 'U') u = true;
    }
    if (nl >= 2) return ty_.builtin(u ? TK::ULLong : TK::LLong);
    if (nl == 1) return ty_.builtin(u ? TK::ULong : TK::Long);
    // Unsuffixed constants too large for int are long (what matters here is only the size class).
    unsigned long long v = std::strtoull(s.c_str(), nullptr, 0);
    if (v > 0x7fffffffull) return ty_.builtin(u ? TK::ULong : TK::Long);
    return ty_.builtin(u ? TK::UInt : TK::Int);
}

} // namespace splitcc
