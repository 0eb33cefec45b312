// diag.hpp - source positions and diagnostics.  Every position refers to the
// Split-C source the user wrote (the preprocessor's line markers are followed),
// so a message reads "file.sc:12:5: error: ...".
#pragma once

#include <string>
#include <vector>

namespace splitcc {

struct Loc {
    int file = 0; // index into Diag::files
    int line = 0;
    int col = 0;
};

class Diag {
public:
    std::vector<std::string> files;
    int errors = 0;
    int warnings = 0;
    bool warnings_as_errors = false;
    bool quiet_warnings = false;
    int max_errors = 50;

    int file_index(const std::string &name);
    std::string where(Loc l) const;
    void error(Loc l, const std::string &msg);
    void warning(Loc l, const std::string &msg);
    void note(Loc l, const std::string &msg);
};

// Thrown when too many errors were reported: stops the translation cleanly.
struct TooManyErrors {};

} // namespace splitcc
