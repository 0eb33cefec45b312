// types.cpp - see types.hpp.
#include "types.hpp"

namespace splitcc {

namespace {
struct BuiltinName {
    TK kind;
    const char *spelling;
};
const BuiltinName kBuiltins[] = {
    {TK::Void, "void"},
    {TK::Bool, "_Bool"},
    {TK::Char, "char"},
    {TK::SChar, "signed char"},
    {TK::UChar, "unsigned char"},
    {TK::Short, "short"},
    {TK::UShort, "unsigned short"},
    {TK::Int, "int"},
    {TK::UInt, "unsigned int"},
    {TK::Long, "long"},
    {TK::ULong, "unsigned long"},
    {TK::LLong, "long long"},
    {TK::ULLong, "unsigned long long"},
    {TK::Int128, "__int128"},
    {TK::UInt128, "unsigned __int128"},
    {TK::Float, "float"},
    {TK::Double, "double"},
    {TK::LDouble, "long double"},
    {TK::OtherScalar, "double"},
    {TK::VaList, "__builtin_va_list"},
};
} // namespace

Types::Types() {
    builtins_.resize(int(TK::Typedef) + 1, nullptr);
    for (const auto &b : kBuiltins) {
        Type t;
        t.kind = b.kind;
        t.spelling = b.spelling;
        builtins_[int(b.kind)] = make(t);
    }
    void_global = pointer(builtin(TK::Void), PtrKind::Global);
    void_spread = pointer(builtin(TK::Void), PtrKind::Spread);
}

Type *Types::make(const Type &t) {
    pool_.push_back(t);
    return &pool_.back();
}

Type *Types::pointer(Type *to, PtrKind pk, unsigned quals) {
    Type t;
    t.kind = TK::Pointer;
    t.pointee = to;
    t.pk = pk;
    t.quals = quals;
    return make(t);
}

Type *Types::array(Type *elem, Expr *size, bool spread) {
    Type t;
    t.kind = TK::Array;
    t.elem = elem;
    t.size = size;
    t.spread = spread;
    return make(t);
}

Type *Types::qualified(Type *base, unsigned quals) {
    if (!quals || (base->quals & quals) == quals) return base;
    Type t = *base;
    t.quals |= quals;
    return make(t);
}

Record *Types::record() {
    records_.emplace_back();
    return &records_.back();
}

Type *strip(Type *t) {
    while (t && t->kind == TK::Typedef) t = t->target;
    return t;
}

bool is_integer(Type *t) {
    t = strip(t);
    if (!t) return false;
    switch (t->kind) {
    case TK::Bool:
    case TK::Char:
    case TK::SChar:
    case TK::UChar:
    case TK::Short:
    case TK::UShort:
    case TK::Int:
    case TK::UInt:
    case TK::Long:
    case TK::ULong:
    case TK::LLong:
    case TK::ULLong:
    case TK::Int128:
    case TK::UInt128:
    case TK::Enum: return true;
    default: return false;
    }
}

bool is_arith(Type *t) {
    t = strip(t);
    return t &&
        (is_integer(t) || t->kind == TK::Float || t->kind == TK::Double || t->kind == TK::LDouble ||
         t->kind == TK::OtherScalar);
}
bool is_pointer(Type *t) { return is_kind(t, TK::Pointer); }
bool is_scalar(Type *t) { return is_arith(t) || is_pointer(t); }
bool is_local_ptr(Type *t) {
    t = strip(t);
    return t && t->kind == TK::Pointer && t->pk == PtrKind::Local;
}
bool is_global_ptr(Type *t) {
    t = strip(t);
    return t && t->kind == TK::Pointer && t->pk == PtrKind::Global;
}
bool is_spread_ptr(Type *t) {
    t = strip(t);
    return t && t->kind == TK::Pointer && t->pk == PtrKind::Spread;
}
bool is_const(Type *t) {
    for (; t; t = t->kind == TK::Typedef ? t->target : nullptr)
        if (t->quals & QConst) return true;
    return false;
}

bool is_gs_ptr(Type *t) {
    t = strip(t);
    return t && t->kind == TK::Pointer && t->pk != PtrKind::Local;
}
bool is_array(Type *t) { return is_kind(t, TK::Array); }
bool is_spread_array(Type *t) {
    t = strip(t);
    return t && t->kind == TK::Array && t->spread;
}
bool is_record(Type *t) {
    t = strip(t);
    return t && (t->kind == TK::Struct || t->kind == TK::Union);
}
bool is_void(Type *t) { return is_kind(t, TK::Void); }
bool is_function(Type *t) { return is_kind(t, TK::Function); }
bool is_float(Type *t) { return is_kind(t, TK::Float); }
bool is_double(Type *t) { return is_kind(t, TK::Double); }

bool mentions_splitc(Type *t) {
    // Typedef names are printed by name, and a typedef of a global pointer is
    // itself emitted as splitc_gptr_t: a use of the name needs no rewriting.
    for (int guard = 0; t && guard < 64; ++guard) {
        switch (t->kind) {
        case TK::Pointer:
            if (t->pk != PtrKind::Local) return true;
            t = t->pointee;
            break;
        case TK::Array:
            if (t->spread) return true;
            t = t->elem;
            break;
        case TK::Function:
            for (auto &p : t->params)
                if (mentions_splitc(p.type)) return true;
            t = t->ret;
            break;
        default: return false;
        }
    }
    return false;
}

int scalar_size(Type *t) {
    t = strip(t);
    if (!t) return 0;
    switch (t->kind) {
    case TK::Bool:
    case TK::Char:
    case TK::SChar:
    case TK::UChar: return 1;
    case TK::Short:
    case TK::UShort: return 2;
    case TK::Int:
    case TK::UInt:
    case TK::Enum:
    case TK::Float: return 4;
    case TK::Long:
    case TK::ULong:
    case TK::LLong:
    case TK::ULLong:
    case TK::Double:
    case TK::Pointer: return 8;
    default: return 0;
    }
}

const Field *find_field(Record *r, const std::string &name, std::vector<const Field *> *path) {
    if (!r) return nullptr;
    for (const Field &f : r->fields) {
        if (f.name == name) {
            if (path) path->push_back(&f);
            return &f;
        }
        if (f.name.empty() && is_record(f.type)) {
            size_t mark = path ? path->size() : 0;
            if (path) path->push_back(&f);
            if (const Field *g = find_field(strip(f.type)->rec, name, path)) return g;
            if (path) path->resize(mark);
        }
    }
    return nullptr;
}

Type *spread_block(Type *t) {
    while (is_spread_array(t)) t = strip(t)->elem;
    return t;
}

std::string describe(Type *t) {
    if (!t) return "?";
    switch (t->kind) {
    case TK::Typedef: return t->name;
    case TK::Struct:
    case TK::Union: {
        std::string k = t->kind == TK::Struct ? "struct " : "union ";
        return k + (t->rec && !t->rec->tag.empty() ? t->rec->tag : "<anonymous>");
    }
    case TK::Enum: return "enum " + (t->rec && !t->rec->tag.empty() ? t->rec->tag : std::string("<anonymous>"));
    case TK::Pointer: {
        std::string q = t->pk == PtrKind::Global ? " *global" : t->pk == PtrKind::Spread ? " *spread" : " *";
        return describe(t->pointee) + q;
    }
    case TK::Array: return describe(t->elem) + (t->spread ? "[]::" : "[]");
    case TK::Function: return describe(t->ret) + " ()";
    default: return t->spelling;
    }
}

} // namespace splitcc
