// driver.cpp - splitcc: compile Split-C programs.
//
//   splitcc -o prog a.sc b.sc util.c      translate, compile and link
//   vipl-run -n 4 ./prog args             run it
//
// Each .sc file is preprocessed by the system C compiler (gnu89, with the
// Split-C headers on the include path), translated to C that calls the
// runtime ABI (splitc_rt.h), and compiled with the same compiler in the
// dialect 1990s code needs; .c files are compiled as they are; everything is
// linked non-PIE (static data must sit at the same address in every process)
// with main() from the runtime and the runtime library.  Options follow the C
// compiler's conventions, which is why they are parsed here by hand.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "splitcc_config.h"
#include "translate.hpp"

extern char **environ;

namespace {

const char *kUsage =
    "usage: splitcc [options] file...\n"
    "Compile Split-C programs (.sc; .c and .o files may be mixed in) for viastack.\n"
    "\n"
    "  -o FILE          write the program (or with -c/-E/--emit-c, the one output) to FILE\n"
    "  -c               compile to object files, do not link\n"
    "  -E               preprocess only (to standard output or -o)\n"
    "  --emit-c         translate only: write the C that a .sc file becomes\n"
    "  -I DIR, -D NAME[=VALUE], -U NAME, -include FILE, -isystem DIR\n"
    "                   preprocessor options\n"
    "  -L DIR, -l LIB, -Wl,OPTS\n"
    "                   linker options\n"
    "  -O*, -g*, -W*, -f*, -m*, -w, -std=*, -pthread\n"
    "                   passed to the C compiler (default optimisation: -O2);\n"
    "                   -fsanitize=... to the linker too\n"
    "  --cc=COMPILER    the system C compiler (default: $SPLITCC_CC, $CC, or the one viastack was built with)\n"
    "  -Werror          also makes translator warnings errors\n"
    "  -v               print each command before running it\n"
    "  --keep           keep the intermediate files (.i and translated .c) next to the outputs\n"
    "  --help, --version\n"
    "\n"
    "Programs include <split-c/split-c.h> (and usually <split-c/control.h>), define\n"
    "splitc_main(argc, argv), and run with:  vipl-run -n PROCS ./prog args\n"
    "Environment: SPLITCC_CC (compiler), SPLITCC_HOME (an installed viastack prefix).\n"
    "See docs/splitc.md and splitcc(1).\n";

struct Options {
    std::vector<std::string> inputs;
    std::string output;
    bool compile_only = false, preprocess_only = false, emit_c = false, verbose = false, keep = false;
    bool werror = false, nowarn = false, have_opt = false;
    std::vector<std::string> pp, cc, ld;
    std::string compiler;
    std::string std; // the user's -std=..., given to the preprocessor too
};

[[noreturn]] void die(const std::string &msg) {
    std::fprintf(stderr, "splitcc: error: %s\n", msg.c_str());
    std::exit(1);
}

bool exists(const std::string &p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0;
}

std::string ext(const std::string &f) {
    auto d = f.rfind('.');
    auto s = f.rfind('/');
    if (d == std::string::npos || (s != std::string::npos && d < s)) return "";
    return f.substr(d);
}

std::string stem(const std::string &f) {
    std::string b = f.substr(f.rfind('/') == std::string::npos ? 0 : f.rfind('/') + 1);
    auto d = b.rfind('.');
    return d == std::string::npos ? b : b.substr(0, d);
}

int run(const std::vector<std::string> &argv, bool verbose, const char *out_file = nullptr) {
    if (verbose) {
        std::string line;
        for (auto &a : argv) line += (line.empty() ? "" : " ") + a;
        std::fprintf(stderr, "%s%s\n", line.c_str(), out_file ? (std::string(" > ") + out_file).c_str() : "");
    }
    std::vector<char *> args;
    for (auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_file) posix_spawn_file_actions_addopen(&fa, 1, out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        die("cannot run '" + argv[0] + "': " + std::strerror(rc) + " (set --cc or SPLITCC_CC to a C compiler)");
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string capture(const std::string &cmd) {
    std::string out;
    if (FILE *p = ::popen(cmd.c_str(), "r")) {
        char buf[512];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

// Where the Split-C headers and the runtime (libsplitc.so, libsplitc_rt_main.a)
// are: an installed prefix (SPLITCC_HOME, or the one this executable sits
// in), else the build tree viastack was configured in.
struct Layout {
    std::string include_dir, rt_main, lib_dir;
};

Layout find_layout() {
    Layout l;
    std::string home;
    if (const char *h = std::getenv("SPLITCC_HOME")) home = h;
    // An installed splitcc (<prefix>/bin/splitcc) uses its own prefix, even on
    // a machine that still has the build tree it was configured in.
    if (home.empty()) {
        char buf[4096];
        ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
        if (n > 0) {
            buf[n] = 0;
            std::string exe = buf;
            std::string prefix = exe.substr(0, exe.rfind('/'));
            prefix = prefix.substr(0, prefix.rfind('/'));
            if (exists(prefix + "/include/viastack/split-c/split-c.h")) home = prefix;
        }
    }
    if (home.empty() && exists(SPLITCC_BUILD_INCLUDE_DIR "/split-c/split-c.h") && exists(SPLITCC_BUILD_RT_MAIN)) {
        l.include_dir = SPLITCC_BUILD_INCLUDE_DIR;
        l.rt_main = SPLITCC_BUILD_RT_MAIN;
        l.lib_dir = SPLITCC_BUILD_LIB_DIR;
        return l;
    }
    if (home.empty())
        die("cannot find the Split-C headers (no installed prefix around this splitcc, and the build tree "
            "is gone); set SPLITCC_HOME to the prefix viastack is installed in");
    l.include_dir = home + "/include/viastack";
    l.lib_dir = home + "/" SPLITCC_INSTALL_LIBDIR;
    l.rt_main = l.lib_dir + "/libsplitc_rt_main.a";
    if (!exists(l.include_dir + "/split-c/split-c.h"))
        die("cannot find the Split-C headers (looked in " + l.include_dir +
            "); set SPLITCC_HOME to the prefix viastack is installed in");
    return l;
}

struct Compiler {
    std::string path;
    bool clang = false;
    int major = 0;
};

Compiler probe(const std::string &path) {
    Compiler c;
    c.path = path;
    std::string v = capture("'" + path + "' --version 2>/dev/null");
    c.clang = v.find("clang") != std::string::npos;
    std::string d = capture("'" + path + "' -dumpversion 2>/dev/null");
    c.major = std::atoi(d.c_str());
    return c;
}

// The dialect of 1990s Split-C programs: gnu89 (implicit int, implicit
// function declarations, K&R definitions, gnu89 inline), common symbols for
// globals defined in headers, and the diagnostics that newer compilers turned
// into errors back to warnings.
std::vector<std::string> dialect(const Compiler &c) {
    std::vector<std::string> f = {"-std=gnu89", "-fcommon"};
    if (c.clang) {
        for (const char *w : {"implicit-function-declaration", "implicit-int", "int-conversion",
                              "incompatible-pointer-types", "return-type", "incompatible-function-pointer-types"})
            f.push_back(std::string("-Wno-error=") + w);
        // K&R definitions are the dialect; Clang 15 and later call each one deprecated.
        f.push_back("-Wno-deprecated-non-prototype");
        f.push_back("-Wno-unknown-warning-option");
    } else if (c.major >= 14) {
        f.push_back("-fpermissive");
    }
    return f;
}

Options parse_args(int argc, char **argv) {
    Options o;
    auto need = [&](int &i, const char *opt) -> std::string {
        if (i + 1 >= argc) die(std::string("option ") + opt + " needs an argument");
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        }
        if (a == "--version") {
            std::printf("splitcc (viastack) %s\n", SPLITCC_VERSION);
            std::exit(0);
        }
        if (a == "-o") o.output = need(i, "-o");
        else if (a == "-c") o.compile_only = true;
        else if (a == "-E") o.preprocess_only = true;
        else if (a == "--emit-c") o.emit_c = true;
        else if (a == "-v") o.verbose = true;
        else if (a == "--keep" || a == "-save-temps") o.keep = true;
        else if (a.rfind("--cc=", 0) == 0) o.compiler = a.substr(5);
        else if (a == "--cc") o.compiler = need(i, "--cc");
        else if (a == "-I" || a == "-D" || a == "-U" || a == "-include" || a == "-isystem" || a == "-idirafter") {
            o.pp.push_back(a);
            o.pp.push_back(need(i, a.c_str()));
        } else if (a.rfind("-I", 0) == 0 || a.rfind("-D", 0) == 0 || a.rfind("-U", 0) == 0) {
            o.pp.push_back(a);
        } else if (a == "-L" || a == "-l") {
            o.ld.push_back(a + need(i, a.c_str()));
        } else if (a.rfind("-L", 0) == 0 || a.rfind("-l", 0) == 0 || a.rfind("-Wl,", 0) == 0 || a == "-static-libgcc") {
            o.ld.push_back(a);
        } else if (a == "-Werror") {
            o.werror = true;
            o.cc.push_back(a);
        } else if (a == "-w") {
            o.nowarn = true;
            o.cc.push_back(a);
        } else if (a == "-pthread") {
            o.cc.push_back(a);
            o.ld.push_back(a);
        } else if (a.rfind("-fsanitize", 0) == 0) {
            // A sanitizer needs its runtime at the link too (as for cc).
            o.cc.push_back(a);
            o.ld.push_back(a);
        } else if (a.rfind("-O", 0) == 0) {
            o.have_opt = true;
            o.cc.push_back(a);
        } else if (a.rfind("-std=", 0) == 0) {
            o.cc.push_back(a); // the user's choice wins (it comes after gnu89)
            o.std = a;         // and the preprocessor's __STDC_VERSION__ and inline macros follow it
        } else if (a.rfind("-g", 0) == 0 || a.rfind("-W", 0) == 0 || a.rfind("-f", 0) == 0 || a.rfind("-m", 0) == 0 ||
                   a == "-pedantic" || a == "-ansi") {
            o.cc.push_back(a);
        } else if (!a.empty() && a[0] == '-') {
            die("unknown option '" + a + "' (see splitcc --help)");
        } else {
            o.inputs.push_back(a);
        }
    }
    if (o.inputs.empty()) die("no input files (usage: splitcc -o prog file.sc ...; see --help)");
    int modes = o.compile_only + o.preprocess_only + o.emit_c;
    if (modes > 1) die("-c, -E and --emit-c exclude each other");
    if (modes && !o.output.empty() && o.inputs.size() > 1) die("-o with -c, -E or --emit-c takes one input file");
    for (auto &f : o.inputs) {
        std::string e = ext(f);
        if (e != ".sc" && e != ".c" && e != ".o" && e != ".a" && e != ".so")
            die("'" + f + "': unknown kind of file (expected .sc, .c, .o, .a or .so)");
        if (!exists(f)) die("'" + f + "': no such file");
    }
    return o;
}

bool read_file(const std::string &p, std::string &out) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
}

} // namespace

int main(int argc, char **argv) {
    Options o = parse_args(argc, argv);
    Layout lay = find_layout();
    std::string cc = o.compiler;
    if (cc.empty() && std::getenv("SPLITCC_CC")) cc = std::getenv("SPLITCC_CC");
    if (cc.empty() && std::getenv("CC")) cc = std::getenv("CC");
    if (cc.empty()) cc = SPLITCC_DEFAULT_CC;
    Compiler comp = probe(cc);
    std::vector<std::string> dia = dialect(comp);

    char tmpl[] = "/tmp/splitcc-XXXXXX";
    std::string tmpdir;
    if (!o.keep) {
        const char *t = ::mkdtemp(tmpl);
        if (!t) die(std::string("cannot create a temporary directory: ") + std::strerror(errno));
        tmpdir = t;
    }
    std::vector<std::string> temps;
    auto cleanup = [&] {
        if (o.keep) return;
        for (auto &t : temps) ::unlink(t.c_str());
        if (!tmpdir.empty()) ::rmdir(tmpdir.c_str());
    };
    auto fail = [&](int code) {
        cleanup();
        return code;
    };
    auto scratch = [&](const std::string &src, const char *suffix) {
        std::string p = o.keep ? stem(src) + suffix : tmpdir + "/" + stem(src) + suffix;
        if (!o.keep) temps.push_back(p);
        return p;
    };

    std::vector<std::string> objects;
    for (const std::string &src : o.inputs) {
        std::string e = ext(src);
        if (e == ".o" || e == ".a" || e == ".so") {
            objects.push_back(src);
            continue;
        }
        std::vector<std::string> ppcmd = {
            comp.path, "-E", "-x", "c", "-std=gnu89", "-D__SPLITC__=1", "-D__splitc__=1", "-isystem", lay.include_dir};
        if (!o.std.empty()) ppcmd.push_back(o.std);
        if (e == ".sc") {
            ppcmd.push_back("-include");
            ppcmd.push_back("splitc_rt.h");
        }
        ppcmd.insert(ppcmd.end(), o.pp.begin(), o.pp.end());
        if (o.nowarn) ppcmd.push_back("-w");
        ppcmd.push_back(src);
        std::string obj =
            o.compile_only && !o.output.empty() ? o.output : (o.compile_only ? stem(src) + ".o" : scratch(src, ".o"));
        if (e == ".c") {
            if (o.preprocess_only) {
                if (!o.output.empty()) {
                    ppcmd.push_back("-o");
                    ppcmd.push_back(o.output);
                }
                if (int rc = run(ppcmd, o.verbose)) return fail(rc);
                continue;
            }
            if (o.emit_c) continue;
            std::vector<std::string> c = {comp.path, "-I" + lay.include_dir};
            c.insert(c.end(), dia.begin(), dia.end());
            if (!o.have_opt) c.push_back("-O2");
            c.insert(c.end(), o.pp.begin(), o.pp.end());
            c.insert(c.end(), o.cc.begin(), o.cc.end());
            c.insert(c.end(), {"-c", src, "-o", obj});
            if (int rc = run(c, o.verbose)) return fail(rc);
            objects.push_back(obj);
            continue;
        }
        // A Split-C source: preprocess, translate, compile.
        if (o.preprocess_only) {
            if (!o.output.empty()) {
                ppcmd.push_back("-o");
                ppcmd.push_back(o.output);
            }
            if (int rc = run(ppcmd, o.verbose)) return fail(rc);
            continue;
        }
        std::string ifile = scratch(src, ".i");
        ppcmd.push_back("-o");
        ppcmd.push_back(ifile);
        if (int rc = run(ppcmd, o.verbose)) return fail(rc ? rc : 1);
        std::string text;
        if (!read_file(ifile, text)) return fail((die("cannot read " + ifile), 1));
        splitcc::Diag diag;
        diag.warnings_as_errors = o.werror;
        diag.quiet_warnings = o.nowarn;
        std::string c_text;
        auto t0 = std::chrono::steady_clock::now();
        bool ok = splitcc::translate(text, src, c_text, diag);
        if (o.verbose) {
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            std::fprintf(stderr, "splitcc: translated %s in %.1f ms\n", src.c_str(), ms);
        }
        if (!ok) {
            std::fprintf(stderr, "splitcc: %d error%s in %s\n", diag.errors, diag.errors == 1 ? "" : "s", src.c_str());
            return fail(1);
        }
        std::string cfile = o.emit_c ? (o.output.empty() ? stem(src) + ".sc.c" : o.output) : scratch(src, ".sc.c");
        {
            std::ofstream out(cfile, std::ios::binary);
            out << c_text;
            if (!out) return fail((die("cannot write " + cfile), 1));
        }
        if (o.emit_c) continue;
        std::vector<std::string> c = {comp.path, "-x", "cpp-output"};
        c.insert(c.end(), dia.begin(), dia.end());
        if (!o.have_opt) c.push_back("-O2");
        c.insert(c.end(), o.cc.begin(), o.cc.end());
        c.insert(c.end(), {"-c", cfile, "-o", obj});
        if (int rc = run(c, o.verbose)) return fail(rc);
        objects.push_back(obj);
    }
    if (o.compile_only || o.preprocess_only || o.emit_c) return fail(0);

    std::string out = o.output.empty() ? "a.out" : o.output;
    std::vector<std::string> link = {comp.path, "-no-pie", "-o", out};
    link.insert(link.end(), objects.begin(), objects.end());
    link.push_back(lay.rt_main);
    link.push_back("-L" + lay.lib_dir);
    link.push_back("-Wl,-rpath," + lay.lib_dir);
    link.push_back("-l" SPLITCC_RUNTIME_NAME);
    link.insert(link.end(), o.ld.begin(), o.ld.end());
    link.push_back("-lm");
    int rc = run(link, o.verbose);
    return fail(rc);
}
