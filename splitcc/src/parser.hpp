// parser.hpp - recursive-descent parser and type checker for C89/C99 with the
// GNU extensions found in glibc headers and 1990s programs, plus Split-C.
// Types are computed while parsing (typedef names need scopes anyway), and
// the Split-C specific checks and conversions are made here: the emitter only
// has to print what this file decided.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"
#include "types.hpp"

namespace splitcc {

struct Specs {
    Type *type = nullptr;
    bool is_typedef = false, is_extern = false, is_static = false, is_inline = false;
    bool is_register = false;
    bool implicit_int = false;
    bool any = false;         // any specifier seen
    std::vector<int> storage; // token indices of storage/function specifiers
    Node *body = nullptr;
    int sb = 0, se = 0;
};

// The specifier words of one declaration, counted while they are read.
struct SpecWords {
    int nsigned = 0, nunsigned = 0, nshort = 0, nlong = 0, nint = 0, nchar = 0, ncomplex = 0;
    std::string base;      // void float double _Bool __int128 ...
    Type *named = nullptr; // a struct, union, enum, typeof or typedef name
    unsigned quals = 0;
    bool have_type() const {
        return named || !base.empty() || nsigned || nunsigned || nshort || nlong || nint || nchar;
    }
};

class Parser {
public:
    Parser(std::vector<Token> &toks, Types &types, Diag &diag);
    Parser(const Parser &) = delete;
    Parser &operator=(const Parser &) = delete;
    // The tree parse_unit() returns lives as long as the parser (nodes_, symbols_).
    Node *parse_unit();
    const std::vector<Token> &tokens() const { return toks_; }

private:
    friend struct ScopeGuard;
    std::vector<Token> &toks_;
    Types &ty_;
    Diag &diag_;
    std::vector<int> ix_; // parser position -> token index (pragmas are skipped)
    size_t p_ = 0;
    std::vector<std::unordered_map<std::string, Symbol *>> scopes_;
    std::vector<std::unordered_map<std::string, Type *>> tags_;
    std::vector<std::unique_ptr<Symbol>> symbols_; // every symbol made (scopes_ only point to them)
    std::vector<std::unique_ptr<Node>> nodes_;     // every node made (the tree only points to them)
    template <class T>
    T *own(T *n) {
        nodes_.emplace_back(n);
        return n;
    }
    Symbol *new_symbol() { return symbols_.emplace_back(std::make_unique<Symbol>()).get(); }
    Type *cur_ret_ = nullptr; // return type of the function being parsed
    bool knr_params_ = false; // parsing a K&R definition's parameter declarations
    int stmt_expr_depth_ = 0;
    std::vector<Expr *> pending_sizes_; // array extents met in the declarator being parsed
    Type *last_stmt_type_ = nullptr;    // type of the last expression statement (for ({ ... }))
    int cond_mid_ = 0;                  // parsing the middle of "a ? b : c": ":-" there is ':' '-'

    // ---- tokens (parse_tokens.cpp)
    const Token &peek(int k = 0) const;
    int tix(int k = 0) const; // token index of peek(k)
    int prev_end() const;     // one past the token index of the last consumed token
    Token &take();
    bool is(const char *s, int k = 0) const { return peek(k).is(s); }
    bool accept(const char *s);
    void expect(const char *s, const char *what = nullptr);
    void expect_colon();
    Loc loc() const { return peek().loc; }
    void skip_balanced(); // from an opening ( [ { to its match
    bool at_end() const { return peek().kind == Tok::End; }

    // ---- scopes (parse_scope.cpp)
    void push_scope();
    void pop_scope();
    Symbol *lookup(const std::string &name) const;
    Symbol *declare(const std::string &name, SymKind k, Type *t, Loc l);
    bool is_typedef_name(const Token &t) const;
    bool starts_type(int k = 0) const; // a type name / declaration starts here
    bool starts_decl(int k = 0) const;

    // ---- declarations (parse_decl.cpp)
    Node *external_decl();
    Specs specs(bool allow_storage);
    bool spec_word(SpecWords &c, Specs &s, bool allow_storage);
    Type *spec_type(const SpecWords &c, Specs &s);
    void skip_attributes();
    bool skip_asm_label();
    Type *record_spec(bool is_union, Specs &s);
    Type *enum_spec(Specs &s);
    // declarators (parse_declarator.cpp)
    Type *declarator(Type *base, std::string &name, Loc &nloc, bool abstract_ok, std::vector<Param> *fparams = nullptr);
    Type *direct_declarator(Type *base, std::string &name, Loc &nloc, bool abstract_ok, std::vector<Param> *fparams);
    Type *suffixes(Type *base, std::vector<Param> *fparams);
    Type *param_list(Type *ret, std::vector<Param> *fparams);
    Type *type_name(int *tb = nullptr, int *te = nullptr);
    // A Decl, or at file scope a FuncDef (a function definition).
    Node *declaration(Specs &s, bool file_scope, bool member = false);
    // A declaration in a block, a struct or a K&R parameter list: always a Decl.
    Decl *inner_declaration(Specs &s, bool member = false) {
        return static_cast<Decl *>(declaration(s, false, member));
    }
    Node *initializer(Type *t);
    Expr *convert_init(Expr *e, Type *t);
    void declare_from(InitDecl *d, Decl *decl, const Specs &s);
    Node *function_def(Decl *decl, InitDecl *d, std::vector<Param> &fparams, Specs &s);

    // ---- statements (parse_stmt.cpp)
    Node *statement();
    Node *for_statement(Node *n); // from its keyword, into n (statement() made it)
    Node *switch_statement(Node *n);
    Node *return_statement(Node *n);
    Block *compound(bool new_scope = true);
    Expr *condition(Expr *e); // a controlling expression
    Expr *paren_condition();

    // ---- expressions (parse_expr.cpp; conversions parse_conv.cpp, assignments parse_assign.cpp)
    Expr *expr();
    Expr *assign_expr();
    Expr *cond_expr();
    Expr *binary(int prec);
    Expr *cast_expr();
    Expr *unary();
    Expr *postfix(Expr *e);
    Expr *primary();
    Expr *mk(EK k, int b, Loc l);
    void fin(Expr *e);                                 // sets e->e and kids
    Expr *rvalue(Expr *e);                             // decay arrays/functions, load remote lvalues
    Expr *convert(Expr *e, Type *to, const char *ctx); // implicit conversion at assignment-like places
    Expr *wrap(EK k, Expr *inner, Type *t, const char *op);
    Type *arith_result(Type *a, Type *b);
    bool null_const(Expr *e) const;
    Expr *member(Expr *base, bool arrow);
    Expr *index(Expr *a, Expr *i);
    Expr *deref(Expr *ptr, int b, Loc l);
    Expr *call(Expr *fn);
    Expr *assign(Expr *l, const std::string &op, Expr *r, int b);
    Expr *splitc_assign(Expr *l, const std::string &op, Expr *r, int b);
    // A write through a global or spread reference to const data (the C
    // compiler cannot see it: the emitted C writes through a runtime call).
    void check_writable(Expr *l, const std::string &what);
    Expr *binop(const std::string &op, Expr *a, Expr *c, int b, Loc l);
    Expr *cast(Type *t, int tb, int te, Expr *e, int b, Loc l);
    Type *literal_type(const Token &t);
};

} // namespace splitcc
