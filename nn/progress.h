#pragma once
// Progress reporting for long work (ProgressBar) and a record of training metrics that writes
// CSV and a self-contained SVG chart (LossCurve).
//
//   ProgressBar bar(loader.size(), "epoch 1/10", {.examples_per_step = 64});
//   for (auto& [xb, yb] : loader) { ...; bar.update(1, {{"loss", loss}, {"acc", accuracy}}); }
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata {

using Metrics = std::vector<std::pair<std::string, double>>;

struct ProgressBarOptions {
  std::ostream* out = nullptr;        // nullptr: std::cout
  // Redraw one line in place ('\r'). Unset: when `out` is std::cout and stdout is a terminal.
  std::optional<bool> interactive;
  int64_t examples_per_step = 0;      // > 0: report examples/s, else steps/s
  double print_interval_seconds = 10; // non-interactive: print at least this often (0: never by time)
  int width = 0;                      // interactive line width; 0: the terminal's (or 80)
};

class ProgressBar {
 public:
  ProgressBar(int64_t total, std::string label, ProgressBarOptions options = {});
  ~ProgressBar();  // finishes the line if finish() was not called
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Advances by `steps` and shows `metrics` (the values given last are shown). Non-interactive
  // output prints a line at every 10% of `total` (and by time); reaching `total` finishes.
  void update(int64_t steps = 1, const Metrics& metrics = {});
  // Prints the final line (elapsed time instead of ETA). Later calls do nothing.
  void finish();
  // The status text: label, count/total, percent, metrics, rate, ETA (or elapsed when finished).
  std::string status() const;
  int64_t count() const { return count_; }

 private:
  void draw();
  double elapsed_seconds() const;

  int64_t total_;
  std::string label_;
  ProgressBarOptions options_;
  std::ostream* out_;
  bool interactive_;
  int64_t count_ = 0;
  Metrics metrics_;
  bool finished_ = false;
  int64_t printed_decile_ = 0;
  std::chrono::steady_clock::time_point start_, last_print_;
};

// Training metrics over time: CSV for tools, SVG for people.
class LossCurve {
 public:
  struct Point {
    int64_t step;
    int64_t epoch;
    double loss;
    std::optional<double> accuracy;
  };

  void record(int64_t step, int64_t epoch, double loss, std::optional<double> accuracy = std::nullopt);
  const std::vector<Point>& points() const { return points_; }

  // "step,epoch,loss,accuracy" then one row per point (accuracy empty where absent).
  std::string to_csv() const;
  void write_csv(const std::string& path) const;
  // A line chart of loss against step (left axis) and, where recorded, accuracy (right axis),
  // with ticks, labels, a title and a legend. Non-finite values are left out of the lines.
  std::string to_svg(const std::string& title = "Training loss") const;
  void write_svg(const std::string& path, const std::string& title = "Training loss") const;

 private:
  std::vector<Point> points_;
};

}  // namespace strata
