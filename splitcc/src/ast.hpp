// ast.hpp - the syntax tree.  Every node covers a token range [b, e); the
// emitter copies a node's tokens as they are unless the node (or one of its
// kids, listed in token order) is "dirty", i.e. must be written differently in
// C because of Split-C types or operators.  So everything that is plain C —
// system headers, attributes, asm labels, most statements — reaches the C
// compiler token for token.
#pragma once

#include <string>
#include <vector>

#include "diag.hpp"
#include "types.hpp"

namespace splitcc {

struct Symbol;

enum class NK {
    Unit,
    FuncDef,
    Decl,
    InitDecl,
    RecordBody,
    InitList,
    Stmt,
    Return,
    Block,
    Expr,
};

struct Node {
    NK nk;
    int b = 0, e = 0;         // token range
    bool dirty = false;       // this node is emitted by custom code
    bool has_dirty = false;   // this node or something below it is dirty
    std::vector<Node *> kids; // in token order
    explicit Node(NK k) : nk(k) {}
    virtual ~Node() = default;
};

enum class EK {
    Ident,
    Literal,
    Paren,
    Unary,
    Postfix,
    Binary,
    Assign,
    Get /* := */,
    Store /* :- */,
    Cond,
    Comma,
    Call,
    Index,
    Member,
    Cast,
    SizeofExpr,
    SizeofType,
    CompoundLit,
    StmtExpr,
    Conv /* implicit conversion */,
    ToBool,
    Opaque /* builtins and the like: copied verbatim */
};

// Where an lvalue lives: in this process, in global memory designated by a
// global pointer, or in a spread array designated by a spread pointer.
enum class Where : char { Local, Remote, Spread };

struct Expr : Node {
    EK ek;
    Where where = Where::Local;
    std::string op; // operator spelling; member name for Member ("." or "->" in op2)
    std::string op2;
    Type *type = nullptr;
    bool lvalue = false;
    bool unused = false; // value discarded (expression statement, comma lhs, for clauses)
    Symbol *sym = nullptr;
    Type *tname = nullptr;                         // cast / sizeof / compound literal type
    int tb = 0, te = 0;                            // token range of that type name
    Expr *a = nullptr, *c = nullptr, *x = nullptr; // operands (a op c), (a ? c : x)
    std::vector<Expr *> args;
    Loc loc;
    explicit Expr(EK k) : Node(NK::Expr), ek(k) {}
};

struct Decl;

struct InitDecl : Node {
    std::string name;
    Loc loc;
    Type *type = nullptr;
    Symbol *sym = nullptr;
    Node *init = nullptr; // Expr or InitList
    int db = 0, de = 0;   // the declarator's tokens
    bool regen = false;   // printed from its type rather than copied
    bool bitfield = false;
    std::string rename; // emitted under this name instead (a splitc_main of another shape)
    InitDecl() : Node(NK::InitDecl) {}
};

struct Decl : Node {
    int sb = 0, se = 0;       // declaration specifier tokens
    std::vector<int> storage; // tokens among them that are storage class / function specifiers
    Type *base = nullptr;
    Node *body = nullptr; // a struct/union/enum body defined in the specifiers
    std::vector<InitDecl *> decls;
    bool file_scope = false;
    bool is_typedef = false;
    bool is_extern = false;
    bool is_static = false;
    bool is_param = false;
    bool for_init = false; // the first clause of a for statement
    bool funcdef = false;  // the specifiers and declarator of a function definition
    Decl() : Node(NK::Decl) {}
};

struct InitList : Node {
    Type *type = nullptr;
    std::vector<Node *> elems; // Expr or InitList, designators left in the tokens
    InitList() : Node(NK::InitList) {}
};

struct Block : Node {
    Block() : Node(NK::Block) {}
};

struct FuncDef : Node {
    Decl *decl = nullptr; // specifiers and declarator
    InitDecl *d = nullptr;
    std::vector<Decl *> knr; // old-style parameter declarations
    Block *body = nullptr;
    Symbol *sym = nullptr;
    bool implicit_int = false;
    bool sys = false; // from a system header: body copied untouched
    std::vector<Symbol *> params;
    FuncDef() : Node(NK::FuncDef) {}
};

enum class SymKind { Var, Typedef, Func, EnumConst };

struct Symbol {
    SymKind kind = SymKind::Var;
    std::string name;
    Type *type = nullptr;
    Loc loc;
    bool file_scope = false;
    bool is_param = false;
    bool spread_var = false;  // a spread array object: the C variable holds its local base address
    bool is_register = false; // declared 'register': it has no address
};

} // namespace splitcc
