// progress.hpp - progress on stderr during a run (rank 0 only).
//
// On a terminal: ONE line, redrawn in place for the whole run: the layer
// (with its place among the layers measured), the sweep and its step, and an
// estimate of the time left; it is erased when the run ends, so only the
// report stays on the screen.  Otherwise (CI logs, pipes, files): plain
// lines, one per sweep start and one per tenth of a sweep.
#pragma once

#include <chrono>
#include <string>

namespace logp {

class Progress {
public:
    explicit Progress(bool enabled);
    ~Progress();
    Progress(const Progress &) = delete;
    Progress &operator=(const Progress &) = delete;

    // The run measures `layers` layers; layer(i, ...) starts the i-th
    // (0-based), which will run `sweeps` sweeps (begin/end pairs).  Without
    // these calls (the synthetic machine) the run is one layer.
    void plan(int layers);
    void layer(int index, const std::string &id, int sweeps);

    // Starts a sweep of `steps` steps called `what` ("vi: bandwidth").
    void begin(const std::string &what, int steps);
    void step(const std::string &detail); // one step done
    void end();
    void note(const std::string &line); // a one-off event ("vi: connecting")
    // Erases the progress line (before printing something else on stderr).
    void clear();

    // Fraction of the whole run done, 0..1 (for the estimate; tested).
    double fraction() const;
    // "~1 min 05 s left", "~12 s left", or "" while too little is done to tell.
    static std::string eta_text(double elapsed_s, double fraction);

private:
    void draw(const std::string &detail);

    bool enabled_, tty_;
    std::string what_;
    int steps_ = 0, done_ = 0;
    int layers_ = 1, layer_index_ = 0, sweeps_ = 1, sweeps_done_ = 0;
    std::string layer_id_;
    bool line_shown_ = false;
    std::chrono::steady_clock::time_point start_;
};

} // namespace logp
