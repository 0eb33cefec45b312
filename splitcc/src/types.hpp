// types.hpp - C types with Split-C's global and spread pointers and spread
// array dimensions.  Whether an expression touches remote memory is decided
// from these types, so they are kept exact where Split-C depends on them
// (pointers, arrays, records, typedef names) and loose where it does not
// (the arithmetic types only need their size and kind).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "diag.hpp"

namespace splitcc {

struct Expr;
struct Type;

enum class TK {
    Void,
    Bool,
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    LLong,
    ULLong,
    Int128,
    UInt128,
    Float,
    Double,
    LDouble,
    OtherScalar /* _Float128, _Complex, ... */,
    VaList,
    Enum,
    Struct,
    Union,
    Pointer,
    Array,
    Function,
    Typedef
};

enum class PtrKind { Local, Global, Spread };

enum Qual : unsigned { QConst = 1, QVolatile = 2, QRestrict = 4 };

struct Field {
    std::string name; // empty for an anonymous struct/union member
    Type *type = nullptr;
    bool bitfield = false;
};

struct Record {
    bool is_union = false;
    bool complete = false;
    std::string tag;          // empty if anonymous
    std::string typedef_name; // a typedef naming it, for anonymous records
    std::vector<Field> fields;
    Loc loc;
    Type *type = nullptr; // the struct/union/enum type naming this record
};

struct Param {
    std::string name;
    Type *type = nullptr;
};

struct Type {
    TK kind = TK::Int;
    unsigned quals = 0;
    std::string spelling; // builtin spelling for printing ("unsigned long", "_Float128")
    // Pointer
    Type *pointee = nullptr;
    PtrKind pk = PtrKind::Local;
    // Array: elem, size expression (null: []), spread (a dimension left of "::")
    Type *elem = nullptr;
    Expr *size = nullptr;
    bool spread = false;
    std::string extent; // C text of the extent as index code must use it (set by the emitter)
    // Function
    Type *ret = nullptr;
    std::vector<Param> params;
    bool variadic = false;
    bool prototyped = false;
    // Struct / Union / Enum
    Record *rec = nullptr;
    // Typedef
    std::string name;
    Type *target = nullptr;
};

class Types {
public:
    Types();
    Type *builtin(TK k) { return builtins_[int(k)]; }
    Type *make(const Type &t);
    Type *pointer(Type *to, PtrKind pk, unsigned quals = 0);
    Type *array(Type *elem, Expr *size, bool spread);
    Type *qualified(Type *t, unsigned quals);
    Record *record();
    Type *void_global; // void *global (the runtime's splitc_gptr_t)
    Type *void_spread; // void *spread (splitc_sptr_t)

private:
    std::deque<Type> pool_;
    std::deque<Record> records_;
    std::vector<Type *> builtins_;
};

// Follows typedefs.
Type *strip(Type *t);
inline bool is_kind(Type *t, TK k) { return t && strip(t)->kind == k; }
bool is_integer(Type *t);
bool is_arith(Type *t);
bool is_scalar(Type *t);
bool is_pointer(Type *t); // any pointer kind
bool is_local_ptr(Type *t);
bool is_global_ptr(Type *t);
bool is_spread_ptr(Type *t);
bool is_gs_ptr(Type *t); // global or spread pointer
bool is_const(Type *t);  // const-qualified, directly or through its typedefs
bool is_array(Type *t);
bool is_spread_array(Type *t); // an array whose outer dimension is spread
bool is_record(Type *t);
bool is_void(Type *t);
bool is_function(Type *t);
// Does the type mention a global or spread pointer or a spread dimension
// anywhere (then C cannot use it as written)?
bool mentions_splitc(Type *t);
// Byte size of a scalar for the runtime's size-specific calls (0 if none).
int scalar_size(Type *t);
bool is_float(Type *t);
bool is_double(Type *t);
// Look up a member (through anonymous members); null if absent.
const Field *find_field(Record *r, const std::string &name, std::vector<const Field *> *path = nullptr);
// Spread arrays: the number of spread elements one step of a pointer to `t`
// moves over, and the bytes of the local block at the bottom of `t`.
Type *spread_block(Type *t);
std::string describe(Type *t); // for diagnostics: "int *global"

// Concatenates strings by appending (GCC 12 misreports "lit" + std::string
// chains as overlapping copies under -O3, -Wrestrict).
template <class... A>
std::string cat(const A &...a) {
    std::string r;
    ((r += a), ...);
    return r;
}

} // namespace splitcc
