// parse_assign.cpp - assignments: C's, and Split-C's split-phase ":=" (get)
// and ":-" (store), which move one scalar or struct through a global reference.
#include <algorithm>
#include <cstring>

#include "parser.hpp"

namespace splitcc {

Expr *Parser::assign(Expr *l, const std::string &op, Expr *r, int b) {
    Expr *e = mk(EK::Assign, b, l->loc);
    e->op = op;
    e->a = l;
    Expr *R = rvalue(r);
    if (is_spread_array(l->type) || is_array(l->type)) diag_.error(l->loc, "assignment to an array");
    check_writable(l, "assignment");
    if (op == "=") {
        R = convert(R, l->type, "assignment");
    } else if (is_gs_ptr(l->type)) {
        if (op != "+=" && op != "-=") diag_.error(l->loc, "invalid '" + op + "' on a '" + describe(l->type) + "'");
        else if (!is_integer(R->type))
            diag_.error(R->loc, "a global or spread pointer moves by an integer, not by a '" + describe(R->type) + "'");
    } else if (is_gs_ptr(R->type)) {
        diag_.error(R->loc, "invalid operand '" + describe(R->type) + "' to '" + op + "'");
    }
    e->c = R;
    e->type = l->type;
    e->dirty = l->where != Where::Local || (is_gs_ptr(l->type) && op != "=");
    fin(e);
    return e;
}

void Parser::check_writable(Expr *l, const std::string &what) {
    if (l->where != Where::Local && is_const(l->type))
        diag_.error(l->loc,
                    what + " to read-only data through a global reference (its type '" + describe(l->type) +
                        "' is const)");
}

Expr *Parser::splitc_assign(Expr *l, const std::string &op, Expr *r, int b) {
    Expr *e = mk(op == ":=" ? EK::Get : EK::Store, b, l->loc);
    e->op = op;
    e->dirty = true;
    e->type = ty_.builtin(TK::Void);
    e->a = l;
    if (is_array(l->type) || is_array(r->type)) {
        diag_.error(l->loc, "'" + op + "' moves one scalar or struct; use bulk_get/bulk_put/bulk_store for arrays");
        e->c = r;
        fin(e);
        return e;
    }
    check_writable(l, op == ":-" ? "signalling store" : "split-phase put");
    if (op == ":-") {
        if (l->where == Where::Local)
            diag_.error(
                l->loc,
                "the signalling store ':-' needs a global reference on its left, as in '*g :- v' or 'A[i] :- v'");
        e->c = convert(rvalue(r), l->type, "a signalling store");
        e->op2 = "store";
    } else if (l->where != Where::Local) {
        if (r->where != Where::Local)
            diag_.error(l->loc, "both sides of ':=' are global references: get into a local variable, then put it");
        e->c = convert(rvalue(r), l->type, "a split-phase put");
        e->op2 = "put";
    } else if (r->where != Where::Local) {
        if (!l->lvalue) diag_.error(l->loc, "the left side of a split-phase get must be a local variable or lvalue");
        else if (l->ek == EK::Ident && l->sym && l->sym->is_register)
            diag_.error(l->loc,
                        "split-phase get into the register variable '" + l->sym->name +
                            "': ':=' fills it through its address at sync(), and a register variable has none; "
                            "remove 'register' from its declaration");
        Type *lt = strip(l->type), *rt = strip(r->type);
        // long double has no scalar transfer size: it moves like a struct (bulk_get).
        bool same = (is_record(lt) && is_record(rt) && lt->rec == rt->rec) ||
            (lt->kind == TK::LDouble && rt->kind == TK::LDouble) ||
            (scalar_size(lt) && scalar_size(lt) == scalar_size(rt) && is_float(lt) == is_float(rt) &&
             is_double(lt) == is_double(rt) && is_pointer(lt) == is_pointer(rt) && is_gs_ptr(lt) == is_gs_ptr(rt));
        if (!same)
            diag_.error(l->loc,
                        "split-phase get of a '" + describe(r->type) + "' into a '" + describe(l->type) +
                            "': both sides of ':=' must have the same type");
        e->c = r;
        e->op2 = "get";
    } else {
        diag_.error(
            l->loc,
            "split-phase assignment ':=' needs a global reference on one side ('l := *g' gets, '*g := v' puts)");
        e->c = rvalue(r);
    }
    fin(e);
    return e;
}

} // namespace splitcc
