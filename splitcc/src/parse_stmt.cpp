// parse_stmt.cpp - statements.
#include "parser.hpp"

namespace splitcc {

namespace {
// A value nobody uses: the emitter then writes no result for remote updates.
void mark_unused(Expr *e) {
    while (e) {
        e->unused = true;
        if (e->ek == EK::Comma) e = e->c;
        else if (e->ek == EK::Paren) e = e->a;
        else break;
    }
}

Node *stmt_node(int b) {
    auto *n = new Node(NK::Stmt);
    n->b = b;
    return n;
}
} // namespace

// "( expression )" controlling an if, while or do.
Expr *Parser::paren_condition() {
    expect("(");
    Expr *c = condition(expr());
    expect(")");
    return c;
}

Block *Parser::compound(bool new_scope) {
    auto *blk = own(new Block);
    blk->b = tix();
    expect("{");
    if (new_scope) push_scope();
    while (!is("}") && !at_end()) {
        size_t before = p_;
        Node *s = statement();
        if (s) blk->kids.push_back(s);
        if (p_ == before) take();
    }
    expect("}");
    if (new_scope) pop_scope();
    blk->e = prev_end();
    return blk;
}

// for (init; condition; step) statement: the init may declare, in a scope of its own.
Node *Parser::for_statement(Node *n) {
    take();
    expect("(");
    push_scope();
    if (starts_decl()) {
        Specs s = specs(true);
        Decl *d = inner_declaration(s);
        d->for_init = true;
        n->kids.push_back(d);
    } else {
        if (!is(";")) {
            Expr *i = expr();
            mark_unused(i);
            n->kids.push_back(i);
        }
        expect(";");
    }
    if (!is(";")) n->kids.push_back(condition(expr()));
    expect(";");
    if (!is(")")) {
        Expr *s = expr();
        mark_unused(s);
        n->kids.push_back(s);
    }
    expect(")");
    n->kids.push_back(statement());
    pop_scope();
    n->e = prev_end();
    return n;
}

// switch (expression) statement.
Node *Parser::switch_statement(Node *n) {
    take();
    expect("(");
    Expr *c = rvalue(expr());
    if (is_gs_ptr(c->type)) diag_.error(c->loc, "switch on a global or spread pointer");
    n->kids.push_back(c);
    expect(")");
    n->kids.push_back(statement());
    n->e = prev_end();
    return n;
}

// return [expression]; converted to the function's return type.
Node *Parser::return_statement(Node *n) {
    take();
    if (!is(";")) {
        Expr *e = rvalue(expr());
        if (cur_ret_ && !is_void(cur_ret_)) e = convert(e, cur_ret_, "return");
        n->kids.push_back(e);
    }
    expect(";");
    n->nk = NK::Return;
    n->e = prev_end();
    return n;
}

Node *Parser::statement() {
    int b = tix();
    const Token &t = peek();
    if (t.is("{")) return compound(true);
    if (t.is(";")) {
        take();
        Node *n = own(stmt_node(b));
        n->e = prev_end();
        return n;
    }
    Node *n = own(stmt_node(b));
    if (t.kind == Tok::Ident) {
        const std::string w = t.text;
        if (is(":", 1) && !is_typedef_name(t) && w != "default") { // label
            take();
            take();
            skip_attributes();
            if (!is("}")) n->kids.push_back(statement());
            n->e = prev_end();
            return n;
        }
        if (w == "if") {
            take();
            n->kids.push_back(paren_condition());
            n->kids.push_back(statement());
            if (accept("else")) n->kids.push_back(statement());
            n->e = prev_end();
            return n;
        }
        if (w == "while") {
            take();
            n->kids.push_back(paren_condition());
            n->kids.push_back(statement());
            n->e = prev_end();
            return n;
        }
        if (w == "do") {
            take();
            n->kids.push_back(statement());
            expect("while");
            n->kids.push_back(paren_condition());
            expect(";");
            n->e = prev_end();
            return n;
        }
        if (w == "for") return for_statement(n);
        if (w == "switch") return switch_statement(n);
        if (w == "case") {
            take();
            n->kids.push_back(cond_expr());
            if (accept("...")) n->kids.push_back(cond_expr());
            expect_colon();
            if (!is("}")) n->kids.push_back(statement());
            n->e = prev_end();
            return n;
        }
        if (w == "default") {
            take();
            expect_colon();
            if (!is("}")) n->kids.push_back(statement());
            n->e = prev_end();
            return n;
        }
        if (w == "break" || w == "continue") {
            take();
            expect(";");
            n->e = prev_end();
            return n;
        }
        if (w == "goto") {
            take();
            if (accept("*")) n->kids.push_back(expr());
            else take();
            expect(";");
            n->e = prev_end();
            return n;
        }
        if (w == "return") return return_statement(n);
        if (w == "asm" || w == "__asm__" || w == "__asm" || w == "__label__") {
            take();
            while (!at_end() && !is(";")) {
                if (is("(")) skip_balanced();
                else take();
            }
            expect(";");
            n->e = prev_end();
            return n;
        }
        if (w == "_Static_assert") {
            take();
            skip_balanced();
            expect(";");
            n->e = prev_end();
            return n;
        }
        if (starts_decl() && !(is_typedef_name(t) && (is("(", 1) && false))) {
            Specs s = specs(true);
            Decl *d = inner_declaration(s);
            return d;
        }
    }
    Expr *e = expr();
    mark_unused(e);
    last_stmt_type_ = rvalue(e)->type;
    n->kids.push_back(e);
    expect(";", "after the expression");
    n->e = prev_end();
    return n;
}

} // namespace splitcc
