// parse_expr.cpp - expressions by precedence climbing.  The Split-C rules live here:
// which lvalues are remote, how global and spread pointers convert, which
// operators need runtime calls (those nodes are marked dirty for the emitter).
// Conversions and result types are in parse_conv.cpp, assignments in parse_assign.cpp.
#include <algorithm>
#include <cstring>

#include "parser.hpp"

namespace splitcc {

// ---- precedence climbing -------------------------------------------------------

Expr *Parser::expr() {
    int b = tix();
    Loc l = loc();
    Expr *e = assign_expr();
    while (is(",")) {
        take();
        Expr *r = assign_expr();
        Expr *c = mk(EK::Comma, b, l);
        c->a = e;
        e->unused = true;
        c->c = r;
        c->type = r->type;
        fin(c);
        e = c;
    }
    return e;
}

Expr *Parser::assign_expr() {
    int b = tix();
    Expr *lhs = cond_expr();
    const Token &t = peek();
    static const char *const kAssign[] = {
        "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", ":=", ":-"};
    if (t.kind == Tok::Punct)
        for (const char *op : kAssign)
            if (t.text == op && !(cond_mid_ && t.text[0] == ':')) {
                std::string o = take().text;
                Expr *rhs = assign_expr();
                if (o == ":=" || o == ":-") return splitc_assign(lhs, o, rhs, b);
                return assign(lhs, o, rhs, b);
            }
    return lhs;
}

Expr *Parser::cond_expr() {
    int b = tix();
    Loc l = loc();
    Expr *c = binary(1);
    if (!is("?")) return c;
    take();
    Expr *e = mk(EK::Cond, b, l);
    e->a = condition(c);
    Expr *t = nullptr;
    if (!is(":")) { // GNU "a ?: b" leaves it out
        ++cond_mid_;
        t = rvalue(expr());
        --cond_mid_;
    }
    expect_colon();
    Expr *f = rvalue(cond_expr());
    Type *tt = t ? t->type : e->a->type, *ft = f->type;
    if (t && is_gs_ptr(tt) && !is_gs_ptr(ft)) f = convert(f, tt, "a conditional expression");
    else if (t && is_gs_ptr(ft) && !is_gs_ptr(tt)) t = convert(t, ft, "a conditional expression");
    e->c = t;
    e->x = f;
    if (is_pointer(tt) || is_record(tt)) e->type = tt;
    else if (is_pointer(ft) || is_record(ft)) e->type = ft;
    else if (is_void(tt)) e->type = tt;
    else e->type = arith_result(tt, ft);
    fin(e);
    return e;
}

namespace {
int precedence(const Token &t) {
    if (t.kind != Tok::Punct) return 0;
    const std::string &s = t.text;
    if (s == "||") return 1;
    if (s == "&&") return 2;
    if (s == "|") return 3;
    if (s == "^") return 4;
    if (s == "&") return 5;
    if (s == "==" || s == "!=") return 6;
    if (s == "<" || s == ">" || s == "<=" || s == ">=") return 7;
    if (s == "<<" || s == ">>") return 8;
    if (s == "+" || s == "-") return 9;
    if (s == "*" || s == "/" || s == "%") return 10;
    return 0;
}
} // namespace

Expr *Parser::binary(int prec) {
    int b = tix();
    Loc l = loc();
    Expr *lhs = cast_expr();
    for (;;) {
        int p = precedence(peek());
        if (p < prec || p == 0) return lhs;
        Loc ol = loc();
        std::string op = take().text;
        Expr *rhs = binary(p + 1);
        lhs = binop(op, lhs, rhs, b, ol);
        (void)l;
    }
}

Expr *Parser::binop(const std::string &op, Expr *a, Expr *c, int b, Loc l) {
    Expr *e = mk(EK::Binary, b, l);
    e->op = op;
    if (op == "&&" || op == "||") {
        e->a = condition(a);
        e->c = condition(c);
        e->type = ty_.builtin(TK::Int);
        fin(e);
        return e;
    }
    Expr *A = rvalue(a), *C = rvalue(c);
    Type *ta = A->type, *tc = C->type;
    bool ga = is_gs_ptr(ta), gc = is_gs_ptr(tc);
    if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" || op == ">=") {
        if (ga || gc) {
            if (ga && !gc) C = convert(C, ta, "a comparison");
            else if (gc && !ga) A = convert(A, tc, "a comparison");
            else if (strip(ta)->pk != strip(tc)->pk) C = convert(C, ta, "a comparison");
            e->dirty = true;
        }
        e->a = A;
        e->c = C;
        e->type = ty_.builtin(TK::Int);
        fin(e);
        return e;
    }
    e->a = A;
    e->c = C;
    if (op == "+" || op == "-") {
        if (is_pointer(ta) && is_integer(tc)) {
            e->type = ta;
            e->dirty = ga;
        } else if (op == "+" && is_integer(ta) && is_pointer(tc)) {
            e->type = tc;
            e->dirty = gc;
        } else if (op == "-" && is_pointer(ta) && is_pointer(tc)) {
            e->type = ty_.builtin(TK::Long);
            e->dirty = ga || gc;
            if ((ga || gc) && strip(ta)->pk != strip(tc)->pk)
                diag_.error(l,
                            "subtracting a '" + describe(tc) + "' from a '" + describe(ta) +
                                "': both pointers must be of the same kind");
        } else if (ga || gc) {
            diag_.error(l, "invalid operands to '" + op + "' ('" + describe(ta) + "' and '" + describe(tc) + "')");
            e->type = ga ? ta : tc;
        } else {
            e->type = arith_result(ta, tc);
        }
    } else if (ga || gc) {
        diag_.error(l, "invalid operands to '" + op + "' ('" + describe(ta) + "' and '" + describe(tc) + "')");
        e->type = ga ? ta : tc; // no second error where the result is used
    } else {
        if (op == "<<" || op == ">>") e->type = arith_result(ta, ty_.builtin(TK::Int));
        else e->type = arith_result(ta, tc);
    }
    fin(e);
    return e;
}

Expr *Parser::cast(Type *t, int tb, int te, Expr *x, int b, Loc l) {
    Expr *e = mk(EK::Cast, b, l);
    e->tname = t;
    e->tb = tb;
    e->te = te;
    Expr *X = rvalue(x);
    e->a = X;
    e->type = t;
    Type *F = strip(X->type), *T = strip(t);
    bool gf = is_gs_ptr(F), gt = is_gs_ptr(T);
    if (gf || gt || mentions_splitc(t)) {
        e->dirty = true;
        if (gt && !gf && !(F && F->kind == TK::Pointer) && !null_const(X))
            diag_.error(l,
                        "cannot cast '" + describe(X->type) + "' to '" + describe(t) +
                            "': only pointers and the constant 0 become global pointers");
        if (gt && !gf && F && F->kind == TK::Pointer && T->pk == PtrKind::Spread)
            diag_.error(l, "cannot cast a local pointer to a spread pointer; spread pointers point into spread arrays");
        if (gf && !gt && T && !(T->kind == TK::Pointer || is_integer(T) || T->kind == TK::Void))
            diag_.error(l, "cannot cast '" + describe(X->type) + "' to '" + describe(t) + "'");
    }
    fin(e);
    return e;
}

Expr *Parser::cast_expr() {
    if (is("(") && starts_type(1)) {
        int b = tix();
        Loc l = loc();
        take();
        int tb, te;
        Type *t = type_name(&tb, &te);
        expect(")");
        if (is("{")) { // compound literal
            Expr *e = mk(EK::CompoundLit, b, l);
            e->tname = t;
            e->tb = tb;
            e->te = te;
            Node *init = initializer(t);
            e->kids.push_back(init);
            e->type = t;
            e->lvalue = true;
            e->dirty = mentions_splitc(t);
            e->e = prev_end();
            return postfix(e);
        }
        return cast(t, tb, te, cast_expr(), b, l);
    }
    return unary();
}

Expr *Parser::deref(Expr *ptr, int b, Loc l) {
    Expr *e = mk(EK::Unary, b, l);
    e->op.assign(1, '*'); // (not = "*": GCC 12 -Wrestrict false positive)
    Expr *P = rvalue(ptr);
    e->a = P;
    Type *pt = strip(P->type);
    if (pt && pt->kind == TK::Pointer) {
        e->type = pt->pointee;
        e->lvalue = true;
        if (pt->pk == PtrKind::Global) e->where = Where::Remote;
        if (pt->pk == PtrKind::Spread) e->where = Where::Spread;
        e->dirty = e->where != Where::Local;
        if (e->dirty && is_function(pt->pointee))
            diag_.error(l, "functions cannot be called through global or spread pointers");
    } else {
        e->type = ty_.builtin(TK::Int);
        e->lvalue = true;
    }
    fin(e);
    return e;
}

Expr *Parser::unary() {
    int b = tix();
    Loc l = loc();
    const Token &t = peek();
    if (t.kind == Tok::Punct) {
        const std::string op = t.text;
        if (op == "++" || op == "--") {
            take();
            Expr *x = unary();
            Expr *e = mk(EK::Unary, b, l);
            e->op = op;
            e->a = x;
            e->type = x->type;
            e->dirty = x->where != Where::Local || is_gs_ptr(x->type);
            if (is_spread_array(x->type)) diag_.error(l, "'" + op + "' applied to a spread array");
            check_writable(x, "'" + op + "'");
            fin(e);
            return e;
        }
        if (op == "*") {
            take();
            return deref(cast_expr(), b, l);
        }
        if (op == "&") {
            take();
            Expr *x = cast_expr();
            Expr *e = mk(EK::Unary, b, l);
            e->op.assign(1, '&');
            e->a = x;
            Type *xt = x->type;
            if (x->where == Where::Local) {
                e->type = ty_.pointer(xt, PtrKind::Local);
            } else if (x->where == Where::Spread) {
                e->type = ty_.pointer(xt, PtrKind::Spread);
                e->dirty = true;
            } else {
                e->type = ty_.pointer(xt, PtrKind::Global);
                e->dirty = true;
            }
            fin(e);
            return e;
        }
        if (op == "&&") { // address of a label
            take();
            Expr *e = mk(EK::Opaque, b, l);
            take();
            e->type = ty_.pointer(ty_.builtin(TK::Void), PtrKind::Local);
            e->e = prev_end();
            return e;
        }
        if (op == "+" || op == "-" || op == "~" || op == "!") {
            take();
            Expr *x = cast_expr();
            Expr *e = mk(EK::Unary, b, l);
            e->op = op;
            if (op == "!") {
                e->a = condition(x);
                e->type = ty_.builtin(TK::Int);
            } else {
                e->a = rvalue(x);
                if (is_gs_ptr(e->a->type))
                    diag_.error(l, "invalid operand to unary '" + op + "' ('" + describe(e->a->type) + "')");
                e->type = arith_result(e->a->type, ty_.builtin(TK::Int));
            }
            fin(e);
            return e;
        }
    }
    if (t.kind == Tok::Ident) {
        const std::string &w = t.text;
        if (w == "sizeof" || w == "_Alignof" || w == "__alignof__" || w == "__alignof") {
            take();
            if (is("(") && starts_type(1)) {
                take();
                Expr *e = mk(EK::SizeofType, b, l);
                e->op = w;
                e->tname = type_name(&e->tb, &e->te);
                expect(")");
                if (is("{")) { // sizeof (type){...}: a compound literal
                    Node *init = initializer(e->tname);
                    (void)init;
                }
                e->type = ty_.builtin(TK::ULong);
                e->dirty = mentions_splitc(e->tname);
                if (is_spread_array(e->tname)) diag_.error(l, "sizeof a spread array type is not defined");
                e->e = prev_end();
                return e;
            }
            Expr *x = unary();
            Expr *e = mk(EK::SizeofExpr, b, l);
            e->op = w;
            e->a = x;
            e->type = ty_.builtin(TK::ULong);
            e->dirty = x->where != Where::Local || mentions_splitc(x->type) || x->has_dirty || x->dirty;
            if (is_spread_array(x->type))
                diag_.error(l, "sizeof a spread array is not defined (its size depends on PROCS)");
            fin(e);
            return e;
        }
        if (w == "__extension__" || w == "__real__" || w == "__imag__" || w == "__real" || w == "__imag") {
            take();
            Expr *x = cast_expr();
            if (w == "__extension__") return x;
            Expr *e = mk(EK::Unary, b, l);
            e->op = w;
            e->a = rvalue(x);
            e->type = ty_.builtin(TK::Double);
            fin(e);
            return e;
        }
    }
    return postfix(primary());
}

Expr *Parser::index(Expr *a, Expr *i) {
    Expr *A = rvalue(a), *I = rvalue(i);
    if (is_pointer(I->type) && !is_pointer(A->type)) std::swap(A, I);
    Expr *e = mk(EK::Index, a->b, a->loc);
    e->a = A;
    e->c = I;
    e->lvalue = true;
    Type *pt = strip(A->type);
    if (pt && pt->kind == TK::Pointer) {
        e->type = pt->pointee;
        if (pt->pk == PtrKind::Global) e->where = Where::Remote;
        if (pt->pk == PtrKind::Spread) e->where = Where::Spread;
        e->dirty = e->where != Where::Local;
        if (is_gs_ptr(I->type)) diag_.error(e->loc, "an array index cannot be a global pointer");
    } else {
        e->type = ty_.builtin(TK::Int);
    }
    return e;
}

Expr *Parser::member(Expr *base, bool arrow) {
    Expr *e = mk(EK::Member, base->b, base->loc);
    e->op2 = arrow ? "->" : ".";
    Type *rt = nullptr;
    Where w = Where::Local;
    if (arrow) {
        Expr *B = rvalue(base);
        e->a = B;
        Type *pt = strip(B->type);
        if (pt && pt->kind == TK::Pointer) {
            rt = pt->pointee;
            if (pt->pk != PtrKind::Local) w = Where::Remote;
        }
        e->lvalue = true;
    } else {
        e->a = base;
        rt = base->type;
        if (base->where != Where::Local) w = Where::Remote;
        e->lvalue = base->lvalue;
    }
    Loc ml = loc();
    std::string name = peek().kind == Tok::Ident ? take().text : "";
    if (name.empty()) diag_.error(ml, "expected a member name after '" + e->op2 + "'");
    e->where = w;
    e->dirty = w != Where::Local;
    e->tname = rt;
    Type *srt = strip(rt);
    std::vector<const Field *> path;
    const Field *f = srt && is_record(srt) ? find_field(srt->rec, name, &path) : nullptr;
    if (f) {
        e->type = f->type;
        std::string p;
        for (const Field *q : path) {
            if (q->name.empty()) continue;
            if (!p.empty()) p += ".";
            p += q->name;
        }
        e->op = p;
        if (f->bitfield && w != Where::Local)
            diag_.error(ml,
                        "bit-field '" + name +
                            "' cannot be accessed through a global pointer (copy the struct with a get first)");
    } else {
        e->op = name;
        e->type = ty_.builtin(TK::Int);
        if (w != Where::Local || (srt && is_record(srt) && srt->rec->complete))
            diag_.error(ml, cat("'", describe(rt), "' has no member named '", name, "'"));
    }
    // An anonymous struct member of a named one is reached through the named
    // struct's offsetof (gr->nested.inner); only a wholly anonymous one fails.
    if (w != Where::Local && is_record(rt) && strip(rt)->rec->tag.empty() && strip(rt)->rec->typedef_name.empty() &&
        !(base->ek == EK::Member && !arrow))
        diag_.error(
            ml, "a struct without a tag or typedef name cannot be accessed through a global pointer: give it a tag");
    return e;
}

Expr *Parser::call(Expr *fn) {
    Expr *F = rvalue(fn);
    Expr *e = mk(EK::Call, fn->b, fn->loc);
    e->a = F;
    Type *ft = strip(F->type);
    if (ft && ft->kind == TK::Pointer) ft = strip(ft->pointee);
    if (ft && ft->kind != TK::Function) ft = nullptr;
    take(); // (
    size_t i = 0;
    while (!is(")") && !at_end()) {
        Expr *a = rvalue(assign_expr());
        if (ft && (ft->prototyped || ft->spelling == "knr") && i < ft->params.size())
            a = convert(a, ft->params[i].type, "passing an argument");
        else if (is_spread_array(a->type))
            diag_.error(a->loc, "a spread array passed to a function without a prototype");
        e->args.push_back(a);
        ++i;
        if (!accept(",")) break;
    }
    expect(")");
    e->type = ft ? ft->ret : ty_.builtin(TK::Int);
    if (!e->type) e->type = ty_.builtin(TK::Int);
    fin(e);
    return e;
}

Expr *Parser::postfix(Expr *e) {
    for (;;) {
        if (is("[")) {
            take();
            Expr *i = expr();
            expect("]");
            Expr *x = index(e, i);
            fin(x);
            e = x;
        } else if (is("(")) {
            e = call(e);
        } else if (is(".") || is("->")) {
            bool arrow = take().text == "->";
            Expr *x = member(e, arrow);
            fin(x);
            e = x;
        } else if (is("++") || is("--")) {
            Expr *x = mk(EK::Postfix, e->b, e->loc);
            x->op = take().text;
            x->a = e;
            x->type = e->type;
            x->dirty = e->where != Where::Local || is_gs_ptr(e->type);
            check_writable(e, "'" + x->op + "'");
            fin(x);
            e = x;
        } else {
            return e;
        }
    }
}

Expr *Parser::primary() {
    int b = tix();
    Loc l = loc();
    const Token &t = peek();
    if (t.kind == Tok::Number || t.kind == Tok::Char) {
        Expr *e = mk(EK::Literal, b, l);
        e->type = literal_type(take());
        e->e = prev_end();
        return e;
    }
    if (t.kind == Tok::String) {
        Expr *e = mk(EK::Literal, b, l);
        size_t n = 0;
        while (peek().kind == Tok::String) { n += take().text.size(); }
        Expr *sz = nullptr;
        e->type = ty_.array(ty_.builtin(TK::Char), sz, false);
        e->lvalue = true;
        e->e = prev_end();
        (void)n;
        return e;
    }
    if (t.is("(")) {
        take();
        if (is("{")) { // GNU statement expression
            Expr *e = mk(EK::StmtExpr, b, l);
            Type *saved = last_stmt_type_;
            last_stmt_type_ = nullptr;
            ++stmt_expr_depth_;
            Block *blk = compound(true);
            --stmt_expr_depth_;
            e->kids.push_back(blk);
            e->type = last_stmt_type_ ? last_stmt_type_ : ty_.builtin(TK::Void);
            last_stmt_type_ = saved;
            expect(")");
            e->e = prev_end();
            return e;
        }
        int saved_mid = cond_mid_;
        cond_mid_ = 0;
        Expr *x = expr();
        cond_mid_ = saved_mid;
        expect(")");
        Expr *e = mk(EK::Paren, b, l);
        e->a = x;
        e->type = x->type;
        e->lvalue = x->lvalue;
        e->where = x->where;
        e->sym = x->sym;
        fin(e);
        return e;
    }
    if (t.kind == Tok::Ident) {
        const std::string w = t.text;
        if (w == "__builtin_va_arg" || w == "__builtin_offsetof" || w == "__builtin_types_compatible_p" ||
            w == "_Generic" || w == "__builtin_convertvector" || w == "__builtin_shufflevector") {
            take();
            Expr *e = mk(EK::Opaque, b, l);
            expect("(");
            if (w == "__builtin_va_arg") {
                Expr *ap = assign_expr();
                e->kids.push_back(ap);
                expect(",");
                e->type = type_name();
            } else if (w == "__builtin_offsetof") {
                e->type = ty_.builtin(TK::ULong);
                type_name();
                int depth = 1;
                while (!at_end() && depth > 0) { // the member designator
                    if (is("(") || is("[")) ++depth;
                    if (is(")") || is("]")) --depth;
                    if (depth == 0) break;
                    take();
                }
            } else if (w == "__builtin_types_compatible_p") {
                type_name();
                expect(",");
                type_name();
                e->type = ty_.builtin(TK::Int);
            } else {
                e->type = ty_.builtin(TK::Int);
                int depth = 1;
                while (!at_end() && depth > 0) {
                    if (is("(") || is("[") || is("{")) ++depth;
                    if (is(")") || is("]") || is("}")) --depth;
                    if (depth == 0) break;
                    take();
                }
            }
            expect(")");
            e->e = prev_end();
            return e;
        }
        take();
        Expr *e = mk(EK::Ident, b, l);
        e->e = prev_end();
        Symbol *s = lookup(w);
        if (!s) {
            if (is("(")) {
                // A call to an undeclared function: 1990s C declares it implicitly
                // as returning int (the C compiler warns about it).
                Type ft;
                ft.kind = TK::Function;
                ft.ret = ty_.builtin(TK::Int);
                s = new_symbol();
                s->name = w;
                s->kind = SymKind::Func;
                s->type = ty_.make(ft);
                s->loc = l;
                s->file_scope = true;
                scopes_.front()[w] = s;
            } else if (w.rfind("__builtin_", 0) == 0 || w == "__func__" || w == "__FUNCTION__" ||
                       w == "__PRETTY_FUNCTION__") {
                e->type = w.rfind("__builtin_", 0) == 0 ? ty_.builtin(TK::Int)
                                                        : ty_.array(ty_.builtin(TK::Char), nullptr, false);
                e->lvalue = true;
                return e;
            } else {
                diag_.error(l, "'" + w + "' undeclared");
                e->type = ty_.builtin(TK::Int);
                return e;
            }
        }
        e->sym = s;
        e->type = s->type;
        if (s->kind == SymKind::Typedef) {
            diag_.error(l, "unexpected type name '" + w + "' in an expression");
        } else if (s->kind == SymKind::Var) {
            e->lvalue = true;
            if (s->spread_var) {
                e->where = Where::Spread;
                e->dirty = true;
            }
        } else if (s->kind == SymKind::EnumConst) {
            e->type = ty_.builtin(TK::Int);
        }
        return e;
    }
    diag_.error(l,
                t.kind == Tok::End ? "expected an expression before end of file"
                                   : "expected an expression before '" + t.text + "'");
    Expr *e = mk(EK::Opaque, b, l);
    if (!at_end() && !is(";") && !is("}") && !is(")")) take();
    e->type = ty_.builtin(TK::Int);
    e->e = std::max(prev_end(), b);
    return e;
}

} // namespace splitcc
