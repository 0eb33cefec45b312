// emit_expr.cpp - expressions.  A remote lvalue is carried as the C text of
// its global (or spread) pointer; reading, writing, getting, putting and
// storing it become the size-specific calls of splitc_rt.h.
#include "emitter.hpp"

namespace splitcc {

namespace {
std::string paren(const std::string &s) { return "(" + s + ")"; }
} // namespace

std::string Emitter::gptr_of(const LV &l) {
    if (l.w == Where::Spread) return "splitc_sptr_to_gptr(" + l.text + ")";
    return l.text;
}

std::string Emitter::as_gptr(Expr *e) {
    std::string v = rv(e);
    if (is_spread_ptr(e->type)) return "splitc_sptr_to_gptr(" + v + ")";
    return v;
}

std::string Emitter::ptr_add(Type *ptr, const std::string &p, const std::string &n, bool negate) {
    Type *P = strip(ptr);
    std::string k = negate ? "-(int64_t)(" + n + ")" : "(int64_t)(" + n + ")";
    if (P->pk == PtrKind::Global)
        return "splitc_gptr_add(" + p + ", " + k + " * (int64_t)" + size_text(P->pointee) + ")";
    if (P->pk == PtrKind::Spread) {
        std::string c = spread_count(P->pointee);
        return "splitc_sptr_add(" + p + ", " + k + (c == "1" ? "" : " * " + c) + ", " + unit_size(P->pointee) + ")";
    }
    return "(" + p + (negate ? " - " : " + ") + n + ")";
}

std::string Emitter::read(Type *t, const std::string &g) {
    Type *s = strip(t);
    int n = scalar_size(s);
    if (is_global_ptr(s)) return "splitc_read_gptr(" + g + ")";
    if (is_spread_ptr(s)) return "splitc_sptr_from_gptr(splitc_read_gptr(" + g + "))";
    if (is_float(s)) return "splitc_read_f(" + g + ")";
    if (is_double(s)) return "splitc_read_d(" + g + ")";
    if (is_pointer(s)) return "((" + ctype_unqual(t) + ")(uintptr_t)splitc_read_8(" + g + "))";
    if (n && is_integer(s)) return "((" + ctype_unqual(t) + ")splitc_read_" + std::to_string(n) + "(" + g + "))";
    std::string v = tmp("t");
    return "({ " + ctype_unqual(t) + " " + v + "; splitc_bulk_read(&" + v + ", " + g + ", sizeof(" + v + ")); " + v +
        "; })";
}

std::string Emitter::access(Type *t, const std::string &g, const std::string &v, const char *op) {
    Type *s = strip(t);
    int n = scalar_size(s);
    std::string o = op;
    if (is_global_ptr(s)) return "splitc_" + o + "_gptr(" + g + ", " + v + ")";
    if (is_spread_ptr(s)) return "splitc_" + o + "_gptr(" + g + ", splitc_sptr_to_gptr(" + v + "))";
    if (is_float(s)) return "splitc_" + o + "_f(" + g + ", " + v + ")";
    if (is_double(s)) return "splitc_" + o + "_d(" + g + ", " + v + ")";
    if (is_pointer(s)) return "splitc_" + o + "_8(" + g + ", (uint64_t)(uintptr_t)(" + v + "))";
    if (n && is_integer(s))
        return "splitc_" + o + "_" + std::to_string(n) + "(" + g + ", (uint" + std::to_string(8 * n) + "_t)(" + v +
            "))";
    std::string tv = tmp("t");
    return "({ " + ctype_unqual(t) + " " + tv + " = " + v + "; splitc_bulk_" + o + "(" + g + ", &" + tv + ", sizeof(" +
        tv + ")); })";
}

std::string Emitter::get(Type *t, const std::string &g, const std::string &dst) {
    Type *s = strip(t);
    int n = scalar_size(s);
    if (n && !is_record(s)) return "splitc_get_" + std::to_string(n) + "(" + dst + ", " + g + ")";
    return "splitc_bulk_get(" + dst + ", " + g + ", sizeof(" + ctype_unqual(t) + "))";
}

LV Emitter::lv(Expr *e) {
    LV l;
    switch (e->ek) {
    case EK::Ident:
        if (e->sym && e->sym->spread_var) {
            l.w = Where::Spread;
            l.text = "splitc_sptr_from_gptr(splitc_toglobal(0, " + e->sym->name + "))";
            return l;
        }
        l.text = e->sym ? e->sym->name : capture_tokens(e->b, e->e);
        return l;
    case EK::Paren: return lv(e->a);
    case EK::Unary:
        if (e->op == "*") {
            Type *P = strip(e->a->type);
            std::string p = rv(e->a);
            if (P && P->kind == TK::Pointer && P->pk == PtrKind::Global) l.w = Where::Remote;
            else if (P && P->kind == TK::Pointer && P->pk == PtrKind::Spread) l.w = Where::Spread;
            l.text = l.w == Where::Local ? "(*" + p + ")" : p;
            return l;
        }
        break;
    case EK::Index: {
        Type *P = strip(e->a->type);
        std::string p = rv(e->a), i = rv(e->c);
        if (!P || P->kind != TK::Pointer || P->pk == PtrKind::Local) {
            l.text = p + "[" + i + "]";
            return l;
        }
        l.w = P->pk == PtrKind::Global ? Where::Remote : Where::Spread;
        l.text = ptr_add(e->a->type, p, i);
        return l;
    }
    case EK::Member: {
        Type *rec = e->tname;
        std::string off;
        if (e->where != Where::Local) {
            // Members of anonymous structs are named from the nearest named one.
            std::string path = e->op;
            auto anonymous = [](Type *t) {
                Type *s = strip(t);
                return s && s->rec && s->rec->tag.empty() && s->rec->typedef_name.empty();
            };
            while (anonymous(rec) && e->op2 == "." && e->a->ek == EK::Member) {
                e = e->a;
                path = e->op + "." + path;
                rec = e->tname;
            }
            off = "(int64_t)__builtin_offsetof(" + ctype_unqual(rec) + ", " + path + ")";
        }
        if (e->op2 == "->") {
            Type *P = strip(e->a->type);
            std::string p = rv(e->a);
            if (!P || P->kind != TK::Pointer || P->pk == PtrKind::Local) {
                l.text = p + "->" + e->op;
                return l;
            }
            if (P->pk == PtrKind::Spread) p = "splitc_sptr_to_gptr(" + p + ")";
            l.w = Where::Remote;
            l.text = "splitc_gptr_add(" + p + ", " + off + ")";
            return l;
        }
        LV b = lv(e->a);
        if (b.w == Where::Local) {
            l.text = b.text + "." + e->op;
            return l;
        }
        l.w = Where::Remote;
        l.text = "splitc_gptr_add(" + gptr_of(b) + ", " + off + ")";
        return l;
    }
    default: break;
    }
    l.text = rv(e);
    return l;
}

std::string Emitter::conv(Expr *e) {
    Type *F = strip(e->a->type), *T = strip(e->type);
    if (e->op == "load") {
        LV l = lv(e->a);
        if (l.w == Where::Local) return l.text;
        return read(e->type, gptr_of(l));
    }
    if (e->op == "decay") {
        LV l = lv(e->a);
        if (l.w == Where::Local) return l.text;
        if (is_spread_ptr(T)) return l.text;
        return gptr_of(l);
    }
    if (e->op == "null") return std::string("((") + (is_spread_ptr(T) ? "splitc_sptr_t" : "splitc_gptr_t") + "){0})";
    std::string v = rv(e->a);
    if (is_gs_ptr(F) && is_gs_ptr(T)) {
        if (F->pk == T->pk) return v;
        return T->pk == PtrKind::Spread ? "splitc_sptr_from_gptr(" + v + ")" : "splitc_sptr_to_gptr(" + v + ")";
    }
    if (is_gs_ptr(T)) return "splitc_toglobal(splitc_rt_myproc, " + v + ")";
    return v;
}

std::string Emitter::cast(Expr *e) {
    Type *F = strip(e->a->type), *T = strip(e->tname);
    std::string v = rv(e->a);
    std::string ct = ctype(e->tname);
    bool gf = is_gs_ptr(F), gt = is_gs_ptr(T);
    if (gf && gt) {
        if (F->pk == T->pk) return v;
        return T->pk == PtrKind::Spread ? "splitc_sptr_from_gptr(" + v + ")" : "splitc_sptr_to_gptr(" + v + ")";
    }
    if (gt) {
        Expr *x = e->a;
        while (x && (x->ek == EK::Paren || (x->ek == EK::Conv && !x->dirty))) x = x->a;
        if (x && (x->ek == EK::Literal || (x->ek == EK::Cast && !is_gs_ptr(x->type) && !is_pointer(F))))
            return "((" + ct + "){0})";
        if (x && x->ek == EK::Cast && is_pointer(F) && !gf) {
            // (T *global)(void *)0 and the like
        }
        return "splitc_toglobal(splitc_rt_myproc, " + v + ")";
    }
    if (gf) {
        std::string g = F->pk == PtrKind::Spread ? "splitc_sptr_to_gptr(" + v + ")" : v;
        if (T && T->kind == TK::Pointer) return "((" + ct + ")splitc_tolocal(" + g + "))";
        if (T && T->kind == TK::Void) return "((void)(" + v + "))";
        return "((" + ct + ")(" + g + ").bits)";
    }
    return "((" + ct + ")" + v + ")";
}

std::string Emitter::binary(Expr *e) {
    const std::string &op = e->op;
    Type *ta = e->a->type, *tc = e->c->type;
    bool ga = is_gs_ptr(ta), gc = is_gs_ptr(tc);
    auto is_null_conv = [](Expr *x) { return x->ek == EK::Conv && x->op == "null"; };
    if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" || op == ">=") {
        if (!ga && !gc) return rv(e->a) + " " + op + " " + rv(e->c);
        if (is_null_conv(e->c) || is_null_conv(e->a)) {
            Expr *p = is_null_conv(e->c) ? e->a : e->c;
            std::string t = "splitc_gptr_is_null(" + as_gptr(p) + ")";
            if (op == "==") return paren(t);
            if (op == "!=") return "(!" + t + ")";
        }
        if (op == "==" || op == "!=") return "((" + rv(e->a) + ").bits " + op + " (" + rv(e->c) + ").bits)";
        Type *P = strip(ta);
        if (P->pk == PtrKind::Spread)
            return "(splitc_sptr_diff(" + rv(e->a) + ", " + rv(e->c) + ", " + unit_size(P->pointee) + ") " + op + " 0)";
        return "(splitc_gptr_diff(" + rv(e->a) + ", " + rv(e->c) + ") " + op + " 0)";
    }
    if ((op == "+" || op == "-") && ga && is_integer(tc)) return ptr_add(ta, rv(e->a), rv(e->c), op == "-");
    if (op == "+" && gc && is_integer(ta)) return ptr_add(tc, rv(e->c), rv(e->a));
    if (op == "-" && ga && gc) {
        Type *P = strip(ta);
        if (P->pk == PtrKind::Spread)
            return "(splitc_sptr_diff(" + rv(e->a) + ", " + rv(e->c) + ", " + unit_size(P->pointee) + ") / " +
                spread_count(P->pointee) + ")";
        return "(splitc_gptr_diff(" + rv(e->a) + ", " + rv(e->c) + ") / (int64_t)" + size_text(P->pointee) + ")";
    }
    return rv(e->a) + " " + op + " " + rv(e->c);
}

std::string Emitter::assign(Expr *e) {
    LV l = lv(e->a);
    Type *t = e->a->type;
    std::string ct = ctype_unqual(t);
    std::string r = rv(e->c);
    std::string bop = e->op.substr(0, e->op.size() - 1);
    auto newval = [&](const std::string &old) {
        if (is_gs_ptr(t)) return ptr_add(t, old, r, bop == "-");
        return "(" + old + ") " + bop + " (" + r + ")";
    };
    if (l.w != Where::Local) {
        std::string g = gptr_of(l);
        if (e->op == "=") {
            if (e->unused) return access(t, g, r, "write");
            std::string gv = tmp("g"), vv = tmp("v");
            return "({ splitc_gptr_t " + gv + " = " + g + "; " + ct + " " + vv + " = " + r + "; " +
                access(t, gv, vv, "write") + "; " + vv + "; })";
        }
        std::string gv = tmp("g"), vv = tmp("v");
        return "({ splitc_gptr_t " + gv + " = " + g + "; " + ct + " " + vv + " = " + newval(read(t, gv)) + "; " +
            access(t, gv, vv, "write") + "; " + (e->unused ? "" : vv + "; ") + "})";
    }
    if (e->op != "=" && is_gs_ptr(t)) {
        std::string pv = tmp("p");
        return "({ " + ct + " *" + pv + " = &(" + l.text + "); *" + pv + " = " + newval("*" + pv) + "; " +
            (e->unused ? "" : "*" + pv + "; ") + "})";
    }
    return l.text + " " + e->op + " " + r;
}

std::string Emitter::incdec(Expr *e, bool prefix) {
    LV l = lv(e->a);
    Type *t = e->a->type;
    std::string ct = ctype_unqual(t);
    auto next = [&](const std::string &old) {
        if (is_gs_ptr(t)) return ptr_add(t, old, "1", e->op == "--");
        return "(" + old + ")" + (e->op == "++" ? " + 1" : " - 1");
    };
    std::string ov = tmp("o"), nv = tmp("n");
    if (l.w != Where::Local) {
        std::string gv = tmp("g");
        return "({ splitc_gptr_t " + gv + " = " + gptr_of(l) + "; " + ct + " " + ov + " = " + read(t, gv) + "; " + ct +
            " " + nv + " = " + next(ov) + "; " + access(t, gv, nv, "write") + "; " +
            (e->unused ? "" : (prefix ? nv : ov) + "; ") + "})";
    }
    std::string pv = tmp("p");
    return "({ " + ct + " *" + pv + " = &(" + l.text + "); " + ct + " " + ov + " = *" + pv + "; *" + pv + " = " +
        next(ov) + "; " + (e->unused ? "" : (prefix ? "*" + pv : ov) + "; ") + "})";
}

std::string Emitter::rv(Expr *e) {
    if (!e->has_dirty && !e->dirty) {
        // Clean: the tokens themselves (mark_dirty has run on every node we reach).
        return capture_tokens(e->b, e->e);
    }
    switch (e->ek) {
    case EK::Conv: return conv(e);
    case EK::ToBool: return "(!splitc_gptr_is_null(" + as_gptr(e->a) + "))";
    case EK::Paren:
        if (e->unused) e->a->unused = true;
        return "(" + rv(e->a) + ")";
    case EK::Ident:
    case EK::Index:
    case EK::Member: {
        LV l = lv(e);
        if (l.w == Where::Local) return l.text;
        if (is_array(e->type)) return l.w == Where::Spread && is_spread_array(e->type) ? l.text : gptr_of(l);
        return read(e->type, gptr_of(l));
    }
    case EK::Unary:
        if (e->op == "*") {
            LV l = lv(e);
            if (l.w == Where::Local) return l.text;
            if (is_array(e->type)) return l.w == Where::Spread && is_spread_array(e->type) ? l.text : gptr_of(l);
            return read(e->type, gptr_of(l));
        }
        if (e->op == "&") {
            LV l = lv(e->a);
            if (l.w == Where::Remote) return l.text;
            if (l.w == Where::Spread) return l.text;
            return "&" + l.text;
        }
        if (e->op == "++" || e->op == "--") return incdec(e, true);
        if (e->op.size() > 2) return e->op + " " + rv(e->a);
        return e->op + rv(e->a);
    case EK::Postfix: return incdec(e, false);
    case EK::Binary: return binary(e);
    case EK::Assign: return assign(e);
    case EK::Get:
        if (e->op2 == "put") {
            LV l = lv(e->a);
            return access(e->a->type, gptr_of(l), rv(e->c), "put");
        }
        if (e->op2 == "get") {
            LV l = lv(e->a);
            LV r = lv(e->c);
            return get(e->c->type, gptr_of(r), "&(" + l.text + ")");
        }
        return rv(e->c);
    case EK::Store: {
        LV l = lv(e->a);
        if (l.w == Where::Local) return l.text + " = " + rv(e->c);
        return access(e->a->type, gptr_of(l), rv(e->c), "store");
    }
    case EK::Cond: return rv(e->a) + " ? " + (e->c ? rv(e->c) : std::string()) + " : " + rv(e->x);
    case EK::Comma:
        if (e->unused) e->c->unused = true; // the value of "a, b" as a statement is b's, unused too
        return rv(e->a) + ", " + rv(e->c);
    case EK::Call: {
        std::string s = rv(e->a) + "(";
        for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + rv(e->args[i]);
        return s + ")";
    }
    case EK::Cast: return cast(e);
    case EK::SizeofExpr: return e->op + "(" + ctype(e->a->type) + ")";
    case EK::SizeofType: return e->op + "(" + ctype(e->tname) + ")";
    case EK::CompoundLit: return "(" + ctype(e->tname) + ")" + capture(e->kids.front());
    default: return capture_splice(e, e->b, e->e);
    }
}

} // namespace splitcc
