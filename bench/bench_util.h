#pragma once
// Benchmarks report ratios: a reference measured in the same run sits beside each figure.
// RatioReporter prints "name / reference = x" lines after the usual table.
#include <benchmark/benchmark.h>

#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace strata::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // Each pair: (benchmark name, reference benchmark name).
  explicit RatioReporter(std::vector<std::pair<std::string, std::string>> pairs) : pairs_(std::move(pairs)) {}

  // With --benchmark_repetitions the median of the repetitions is used, and the ratio of the
  // fastest repetitions is printed beside it: on a shared machine a neighbour's load only ever
  // adds time, so the minimum is the least disturbed figure. Add
  // --benchmark_enable_random_interleaving so that a burst of load hits both sides of a pair.
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const std::string name = run.run_name.str();
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median") {
        times_[name] = run.GetAdjustedRealTime();
        medians_[name] = true;
      } else if (run.run_type == Run::RT_Iteration) {
        const double time = run.GetAdjustedRealTime();
        if (!medians_[name]) times_[name] = time;
        if (!minimums_.count(name) || time < minimums_[name]) minimums_[name] = time;
        ++repetitions_[name];
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::cout << "\nratios (time / reference time; lower is faster):\n";
    for (const auto& [name, reference] : pairs_) {
      if (!times_.count(name) || !times_.count(reference)) continue;
      std::cout << "  " << name << " / " << reference << " = " << times_[name] / times_[reference];
      if (repetitions_[name] > 1 && repetitions_[reference] > 1)
        std::cout << "  (fastest repetitions: " << minimums_[name] / minimums_[reference] << ")";
      std::cout << "\n";
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
  std::map<std::string, double> times_;
  std::map<std::string, bool> medians_;
  std::map<std::string, double> minimums_;
  std::map<std::string, int> repetitions_;
};

inline int run_with_ratios(int argc, char** argv, std::vector<std::pair<std::string, std::string>> pairs) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter(std::move(pairs));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace strata::bench
