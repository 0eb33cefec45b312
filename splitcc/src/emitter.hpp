// emitter.hpp - the emitter's internals, shared by emit.cpp (declarations,
// statements, line markers) and emit_expr.cpp (expressions).
#pragma once

#include <string>
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"

namespace splitcc {

struct LV {
    Where w = Where::Local;
    std::string text; // C lvalue (Local), global pointer (Remote) or spread pointer (Spread)
};

class Emitter {
public:
    Emitter(const std::vector<Token> &toks, Diag &diag) : toks_(toks), diag_(diag) {}
    std::string run(Node *unit);

    // ---- output
    void node(Node *n);
    void splice(Node *n, int b, int e);
    void tokens(int b, int e);
    void put(const std::string &s); // generated text at the current position
    void at(int tok);               // move the output to token `tok`'s line
    std::string capture(Node *n);   // a node's C text as a string (no line tracking)
    std::string capture_tokens(int b, int e);
    std::string capture_splice(Node *n, int b, int e);
    // Runs f with the output going to a string (no line tracking); returns it.
    template <class F>
    std::string captured(F f) {
        std::string s;
        std::string *saved = sink_;
        bool st = track_;
        sink_ = &s;
        track_ = false;
        f();
        sink_ = saved;
        track_ = st;
        return s;
    }

    // ---- declarations (emit.cpp)
    void decl(Decl *d);
    void funcdef(FuncDef *f);
    void spread_decl(Decl *d, InitDecl *id);
    std::string spec_text(Decl *d, bool with_storage);
    std::string storage_text(Decl *d);
    std::string extents(Type *t, const std::string &var, bool save, std::string &prologue);

    // ---- types (emit.cpp)
    std::string print(Type *t, const std::string &inner, Type *base = nullptr, const std::string &base_text = "");
    std::string ctype(Type *t) { return print(t, ""); }
    std::string ctype_unqual(Type *t);
    std::string size_text(Type *t);
    std::string extent(Type *arr);
    std::string spread_count(Type *t); // spread elements one step of a pointer to t moves
    std::string unit_size(Type *t);    // bytes of one spread element of t

    // ---- expressions (emit_expr.cpp)
    std::string rv(Expr *e);
    LV lv(Expr *e);
    std::string gptr_of(const LV &l);
    std::string as_gptr(Expr *e);
    std::string ptr_add(Type *ptr, const std::string &p, const std::string &n, bool negate = false);
    std::string access(Type *t, const std::string &g, const std::string &v, const char *op); // write/put/store
    std::string read(Type *t, const std::string &g);
    std::string get(Type *t, const std::string &g, const std::string &dst);
    std::string assign(Expr *e);
    std::string incdec(Expr *e, bool prefix);
    std::string binary(Expr *e);
    std::string cast(Expr *e);
    std::string conv(Expr *e);
    std::string tmp(const char *stem) { return "__sc_" + std::string(stem) + std::to_string(++counter_); }

    const std::vector<Token> &toks_;
    Diag &diag_;
    std::string out_;
    std::string *sink_ = &out_;
    bool track_ = true;
    int cur_file_ = -1;
    int cur_line_ = 0;
    bool cur_sys_ = false;
    int counter_ = 0;
    FuncDef *func_ = nullptr;
};

bool mark_dirty(Node *n);

} // namespace splitcc
