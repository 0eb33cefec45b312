// emit.cpp - output with line markers, declarations, function definitions and
// the printing of types as C.
#include "emit.hpp"

#include "emitter.hpp"

namespace splitcc {

namespace {
std::string quote_file(const std::string &f) {
    std::string r = "\"";
    for (char c : f) {
        if (c == '"' || c == '\\') r += '\\';
        r += c;
    }
    return r + "\"";
}

bool is_splitc_main(FuncDef *f) {
    return f->d && f->d->name == "splitc_main" && f->sym && is_function(f->d->type) &&
        is_kind(strip(f->d->type)->ret, TK::Int);
}

// The runtime calls int splitc_main(int argc, char **argv).  1990s programs
// also wrote "void splitc_main(...)" and "splitc_main()": those are emitted
// under another name and called from a splitc_main of the runtime's shape.
bool needs_main_wrapper(FuncDef *f) {
    if (!f->d || f->d->name != "splitc_main" || f->sys || !is_function(f->d->type)) return false;
    Type *t = strip(f->d->type);
    return !is_kind(t->ret, TK::Int) || t->params.size() != 2;
}

bool has_spread_params(FuncDef *f) {
    for (Symbol *s : f->params)
        if (is_spread_ptr(s->type) && is_array(strip(s->type)->pointee)) return true;
    return false;
}
} // namespace

bool mark_dirty(Node *n) {
    if (!n) return false;
    bool d = false;
    for (Node *k : n->kids) d |= mark_dirty(k);
    if (n->nk == NK::Decl) {
        auto *dc = static_cast<Decl *>(n);
        for (InitDecl *id : dc->decls)
            if (id->regen || (id->sym && id->sym->spread_var)) dc->dirty = true;
    } else if (n->nk == NK::FuncDef) {
        auto *f = static_cast<FuncDef *>(n);
        if (needs_main_wrapper(f)) {
            f->d->rename = "splitc_user_main_";
            f->d->regen = true;
            f->decl->dirty = f->decl->has_dirty = true;
        }
        if (!f->sys && (is_splitc_main(f) || has_spread_params(f) || !f->d->rename.empty())) f->dirty = true;
    }
    n->has_dirty = d || n->dirty;
    return n->has_dirty;
}

// ---- output ------------------------------------------------------------------------

void Emitter::at(int tok) {
    if (!track_ || tok < 0 || size_t(tok) >= toks_.size()) return;
    const Token &t = toks_[tok];
    if (t.loc.file != cur_file_ || t.loc.line < cur_line_ || t.loc.line > cur_line_ + 8 || t.sys != cur_sys_) {
        if (!out_.empty() && out_.back() != '\n') out_ += '\n';
        out_ +=
            "# " + std::to_string(t.loc.line) + " " + quote_file(diag_.files[t.loc.file]) + (t.sys ? " 3" : "") + "\n";
        cur_file_ = t.loc.file;
        cur_line_ = t.loc.line;
        cur_sys_ = t.sys;
        return;
    }
    while (cur_line_ < t.loc.line) {
        out_ += '\n';
        ++cur_line_;
    }
}

void Emitter::tokens(int b, int e) {
    for (int i = b; i < e; ++i) {
        const Token &t = toks_[i];
        if (t.kind == Tok::End) continue;
        if (t.kind == Tok::Pragma) {
            if (track_) {
                at(i);
                if (!out_.empty() && out_.back() != '\n') {
                    out_ += '\n';
                    ++cur_line_;
                    out_ += "# " + std::to_string(t.loc.line) + " " + quote_file(diag_.files[t.loc.file]) + "\n";
                }
                out_ += t.text + "\n";
                ++cur_line_;
            } else {
                *sink_ += "\n" + t.text + "\n";
            }
            continue;
        }
        if (track_) {
            int before = cur_line_;
            int file = cur_file_;
            at(i);
            bool fresh = out_.empty() || out_.back() == '\n';
            if (!fresh && (t.space_before || before != cur_line_ || file != cur_file_)) out_ += ' ';
            if (fresh && t.loc.col > 1 && t.loc.col < 80) out_.append(size_t(t.loc.col - 1), ' ');
            out_ += t.text;
        } else {
            if (!sink_->empty() && sink_->back() != ' ' && sink_->back() != '\n') *sink_ += ' ';
            *sink_ += t.text;
        }
    }
}

void Emitter::put(const std::string &s) {
    if (track_ && !out_.empty() && out_.back() != '\n' && out_.back() != ' ') out_ += ' ';
    if (!track_ && !sink_->empty() && sink_->back() != ' ' && sink_->back() != '\n') *sink_ += ' ';
    *sink_ += s;
}

void Emitter::splice(Node *n, int b, int e) {
    int pos = b;
    for (Node *k : n->kids) {
        if (!k->has_dirty) continue;
        if (k->b < pos || k->e > e) continue; // not inside this range
        tokens(pos, k->b);
        node(k);
        pos = k->e;
    }
    tokens(pos, e);
}

void Emitter::node(Node *n) {
    if (!n->has_dirty) {
        tokens(n->b, n->e);
        return;
    }
    if (!n->dirty) {
        splice(n, n->b, n->e);
        return;
    }
    switch (n->nk) {
    case NK::Expr:
        at(n->b);
        put(rv(static_cast<Expr *>(n)));
        break;
    case NK::Decl: decl(static_cast<Decl *>(n)); break;
    case NK::FuncDef: funcdef(static_cast<FuncDef *>(n)); break;
    default: splice(n, n->b, n->e);
    }
}

std::string Emitter::capture(Node *n) {
    return captured([&] { node(n); });
}
std::string Emitter::capture_tokens(int b, int e) {
    return captured([&] { tokens(b, e); });
}
std::string Emitter::capture_splice(Node *n, int b, int e) {
    return captured([&] { splice(n, b, e); });
}

std::string Emitter::run(Node *unit) {
    mark_dirty(unit);
    node(unit);
    out_ += '\n';
    return out_;
}

// ---- types ---------------------------------------------------------------------------

namespace {
std::string quals_text(unsigned q) {
    std::string s;
    if (q & QConst) s += "const ";
    if (q & QVolatile) s += "volatile ";
    return s;
}
std::string join(const std::string &a, const std::string &b) {
    if (b.empty()) return a;
    if (a.empty()) return b;
    return a + " " + b;
}
} // namespace

std::string Emitter::print(Type *t, const std::string &inner, Type *base, const std::string &base_text) {
    if (!t) return join("int", inner);
    if (base && t == base) return join(base_text, inner);
    switch (t->kind) {
    case TK::Typedef: return join(quals_text(t->quals) + t->name, inner);
    case TK::Pointer: {
        if (t->pk == PtrKind::Global) return join(quals_text(t->quals) + "splitc_gptr_t", inner);
        if (t->pk == PtrKind::Spread) return join(quals_text(t->quals) + "splitc_sptr_t", inner);
        std::string s = cat("*", t->quals & QConst ? " const " : "", inner);
        Type *p = t->pointee;
        if (p && (p->kind == TK::Array || p->kind == TK::Function)) s = "(" + s + ")";
        return print(p, s, base, base_text);
    }
    case TK::Array:
        if (t->spread) return join("char *", inner);
        return print(t->elem, inner + "[" + (t->size ? extent(t) : "") + "]", base, base_text);
    case TK::Function: {
        std::string ps;
        if (t->prototyped) {
            for (size_t i = 0; i < t->params.size(); ++i) {
                if (i) ps += ", ";
                ps += print(t->params[i].type, t->params[i].name);
            }
            if (t->variadic) ps += t->params.empty() ? "..." : ", ...";
            if (t->params.empty() && !t->variadic) ps = "void";
        } else {
            for (size_t i = 0; i < t->params.size(); ++i) {
                if (i) ps += ", ";
                ps += t->params[i].name;
            }
        }
        return print(t->ret, inner + "(" + ps + ")", base, base_text);
    }
    case TK::Struct:
    case TK::Union:
    case TK::Enum: {
        Record *r = t->rec;
        std::string kw = t->kind == TK::Struct ? "struct " : t->kind == TK::Union ? "union " : "enum ";
        std::string name;
        if (r && !r->tag.empty()) name = kw + r->tag;
        else if (r && !r->typedef_name.empty()) name = r->typedef_name;
        else if (t->kind == TK::Enum) name = "int";
        else {
            diag_.error(r ? r->loc : Loc{},
                        "an anonymous struct is used where splitcc must name its type: give it a tag");
            name = kw + "__sc_anonymous";
        }
        return join(quals_text(t->quals) + name, inner);
    }
    default: return join(quals_text(t->quals) + t->spelling, inner);
    }
}

std::string Emitter::ctype_unqual(Type *t) {
    if (t && t->quals) {
        Type c = *t;
        c.quals = 0;
        return print(&c, "");
    }
    return print(t, "");
}

std::string Emitter::extent(Type *arr) {
    if (!arr->extent.empty()) return arr->extent;
    if (!arr->size) return "0";
    return cat("(", rv(arr->size), ")");
}

std::string Emitter::size_text(Type *t) {
    Type *s = strip(t);
    if (!s) return "sizeof(int)";
    if (s->kind == TK::Array && !s->spread) return "((size_t)" + extent(s) + " * " + size_text(s->elem) + ")";
    if (s->kind == TK::Void) return "1";
    return "sizeof(" + ctype_unqual(t) + ")";
}

std::string Emitter::spread_count(Type *t) {
    std::string c;
    for (Type *s = strip(t); s && s->kind == TK::Array && s->spread; s = strip(s->elem))
        c += (c.empty() ? "" : " * ") + std::string("(int64_t)") + extent(s);
    return c.empty() ? "1" : "(" + c + ")";
}

std::string Emitter::unit_size(Type *t) { return size_text(spread_block(t)); }

// ---- declarations ---------------------------------------------------------------------

std::string Emitter::storage_text(Decl *d) {
    std::string s;
    for (int i : d->storage) s += (s.empty() ? "" : " ") + toks_[i].text;
    return s;
}

// The specifiers as C: the struct body (if any) with its own rewriting,
// optionally without the storage-class tokens.
std::string Emitter::spec_text(Decl *d, bool with_storage) {
    auto is_storage = [&](int i) {
        for (int k : d->storage)
            if (k == i) return true;
        return false;
    };
    return captured([&] {
        int pos = d->sb;
        while (pos < d->se) {
            if (d->body && pos == d->body->b) {
                node(d->body);
                pos = d->body->e;
                continue;
            }
            if (with_storage || !is_storage(pos)) tokens(pos, pos + 1);
            ++pos;
        }
    });
}

namespace {
// Does printing t reach the specifier type (so the specifier text is needed)?
bool reaches(Type *t, Type *base) {
    for (int guard = 0; t && guard < 256; ++guard) {
        if (t == base) return true;
        if (t->kind == TK::Pointer) {
            if (t->pk != PtrKind::Local) return false;
            t = t->pointee;
        } else if (t->kind == TK::Array) {
            if (t->spread) return false;
            t = t->elem;
        } else if (t->kind == TK::Function) {
            t = t->ret;
        } else {
            return false;
        }
    }
    return false;
}
} // namespace

// Saves the extents of every array dimension of t (for index arithmetic) and
// returns the C declarations that hold them; with save=false the extents are
// the size expressions themselves (file scope: constants or PROCS).
std::string Emitter::extents(Type *t, const std::string &var, bool save, std::string &prologue) {
    int i = 0;
    for (Type *s = strip(t); s && s->kind == TK::Array; s = strip(s->elem), ++i) {
        if (!s->size) {
            s->extent.assign(1, '1'); // (not = "1": GCC 12 -Wrestrict false positive)
            continue;
        }
        std::string e = cat("(", rv(s->size), ")");
        if (save) {
            std::string n = "__sc_" + var + "_e" + std::to_string(i);
            prologue += "const long " + n + " = (long)" + e + "; ";
            s->extent = n;
        } else {
            s->extent = e;
        }
    }
    return prologue;
}

void Emitter::spread_decl(Decl *d, InitDecl *id) {
    Type *t = id->type;
    const std::string &n = id->name;
    std::string code;
    Type *block = spread_block(t);
    Type *scalar = block;
    while (is_array(scalar)) scalar = strip(scalar)->elem;
    std::string align = "__alignof__(" + ctype_unqual(scalar) + ")";
    if (d->file_scope) {
        std::string none;
        extents(t, n, false, none);
        if (d->is_extern) {
            put("extern char *" + n + ";");
            return;
        }
        std::string st = d->is_static ? "static " : "";
        code = st + "char *" + n + "; ";
        code += "static size_t __sc_size_" + n + "(void) { return ((size_t)" + spread_count(t) +
            " + (size_t)splitc_rt_procs - 1) / (size_t)splitc_rt_procs * " + unit_size(t) + "; } ";
        code += "static void __attribute__((constructor)) __sc_register_" + n +
            "(void) { splitc_register_static_fn((void **)&" + n + ", __sc_size_" + n + ", " + align + "); }";
        put(code);
        return;
    }
    std::string prologue;
    extents(t, n, true, prologue);
    std::string sc = tmp("scope");
    code = prologue + "splitc_scope_t " + sc + " __attribute__((cleanup(splitc_scope_leave))) = splitc_scope_enter(); ";
    code += "char *" + n + " = (char *)splitc_scope_alloc((size_t)" + spread_count(t) + ", " + unit_size(t) + ", " +
        align + ");";
    put(code);
}

void Emitter::decl(Decl *d) {
    at(d->b);
    bool funcdef = d->funcdef;
    std::vector<InitDecl *> normal, collapsed, spread;
    for (InitDecl *id : d->decls) {
        if (id->sym && id->sym->spread_var && !funcdef) spread.push_back(id);
        else if (id->regen && !reaches(id->type, d->base)) collapsed.push_back(id);
        else normal.push_back(id);
    }
    auto init_text = [&](InitDecl *id) { return id->init ? " = " + capture(id->init) : std::string(); };
    std::string term = funcdef ? "" : ";";
    if (!normal.empty()) {
        std::string s = spec_text(d, true);
        for (size_t i = 0; i < normal.size(); ++i) {
            InitDecl *id = normal[i];
            s += i ? ", " : " ";
            if (id->regen)
                s += print(id->type, id->rename.empty() ? id->name : id->rename, d->base, "") + init_text(id);
            else s += capture_splice(id, id->b, id->e);
        }
        put(s + term);
    } else if (d->body) {
        put(spec_text(d, false) + ";");
    }
    for (InitDecl *id : collapsed) {
        std::string st = storage_text(d);
        put(join(st, print(id->type, id->name)) + init_text(id) + term);
    }
    for (InitDecl *id : spread) spread_decl(d, id);
}

void Emitter::funcdef(FuncDef *f) {
    FuncDef *saved = func_;
    func_ = f;
    Block *body = f->body;
    // Everything before the body's '{'.
    int pos = f->b;
    for (Node *k : f->kids) {
        if (k == body) break;
        if (!k->has_dirty) continue;
        tokens(pos, k->b);
        node(k);
        pos = k->e;
    }
    tokens(pos, body->b + 1);
    std::string prologue;
    for (Symbol *s : f->params) {
        if (!(is_spread_ptr(s->type) && is_array(strip(s->type)->pointee))) continue;
        extents(strip(s->type)->pointee, s->name, true, prologue);
    }
    if (!prologue.empty()) put(prologue);
    splice(body, body->b + 1, body->e - 1);
    if (is_splitc_main(f)) put("return 0;"); // a 1990s splitc_main may fall off its end
    tokens(body->e - 1, body->e);
    if (!f->d->rename.empty()) {
        Type *t = strip(f->d->type);
        std::string args = t->params.size() >= 2 ? "argc, argv" : t->params.size() == 1 ? "argc" : "";
        std::string call = f->d->rename + "(" + args + ")";
        put(is_kind(t->ret, TK::Int) ? "int splitc_main(int argc, char **argv) { return " + call + "; }"
                                     : "int splitc_main(int argc, char **argv) { " + call + "; return 0; }");
    }
    func_ = saved;
}

std::string emit_c(Node *unit, const std::vector<Token> &toks, Diag &diag) {
    Emitter em(toks, diag);
    return em.run(unit);
}

} // namespace splitcc
