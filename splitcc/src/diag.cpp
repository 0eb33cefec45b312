// diag.cpp - diagnostics printed in the compiler's usual "file:line:col:" form.
#include "diag.hpp"

#include <cstdio>

namespace splitcc {

int Diag::file_index(const std::string &name) {
    for (size_t i = 0; i < files.size(); ++i)
        if (files[i] == name) return int(i);
    files.push_back(name);
    return int(files.size() - 1);
}

std::string Diag::where(Loc l) const {
    std::string f = l.file >= 0 && size_t(l.file) < files.size() ? files[l.file] : "<input>";
    return f + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
}

void Diag::error(Loc l, const std::string &msg) {
    ++errors;
    std::fprintf(stderr, "%s: error: %s\n", where(l).c_str(), msg.c_str());
    if (errors >= max_errors) {
        std::fprintf(stderr, "splitcc: too many errors (%d), stopping\n", errors);
        throw TooManyErrors{};
    }
}

void Diag::warning(Loc l, const std::string &msg) {
    if (warnings_as_errors) return error(l, msg + " [-Werror]");
    ++warnings;
    if (!quiet_warnings) std::fprintf(stderr, "%s: warning: %s\n", where(l).c_str(), msg.c_str());
}

void Diag::note(Loc l, const std::string &msg) {
    std::fprintf(stderr, "%s: note: %s\n", where(l).c_str(), msg.c_str());
}

} // namespace splitcc
