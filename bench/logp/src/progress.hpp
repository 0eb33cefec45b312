// progress.hpp - per-step progress on stderr during sweeps (rank 0 only): a
// bar redrawn in place on a terminal, one line per step otherwise (CI logs).
#pragma once

#include <string>

namespace logp {

class Progress {
public:
    explicit Progress(bool enabled);
    // Starts a sweep of `steps` steps called `what` ("vi: bandwidth").
    void begin(const std::string &what, int steps);
    void step(const std::string &detail);  // one step done
    void end();
    void note(const std::string &line);   // a one-off line ("vi: connected")

private:
    bool enabled_, tty_;
    std::string what_;
    int steps_ = 0, done_ = 0;
};

}  // namespace logp
