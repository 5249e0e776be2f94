// Tests for nn/progress.cpp: ProgressBar's text forms and LossCurve's CSV and SVG.
#include <doctest/doctest.h>

#include <strata/nn/progress.h>
#include <strata/tensor/errors.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"

using namespace strata;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

size_t count_of(const std::string& text, const std::string& piece) {
  size_t count = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + piece.size())) ++count;
  return count;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

}  // namespace

TEST_CASE("progress: without a terminal, a line every 10% and a final line") {
  std::ostringstream out;
  {
    ProgressBar bar(100, "epoch 1/3", {.out = &out, .interactive = false, .examples_per_step = 32, .print_interval_seconds = 0});
    for (int step = 0; step < 100; ++step) bar.update(1, {{"loss", 0.31}, {"acc", 0.92}});
    CHECK(bar.count() == 100);
  }
  std::vector<std::string> lines = lines_of(out.str());
  REQUIRE(lines.size() == 10);  // 10%, 20%, ..., 90%, then the final line at 100%
  CHECK(out.str().find('\r') == std::string::npos);
  CHECK(lines[0].rfind("epoch 1/3 10/100  10% loss 0.31 acc 0.92", 0) == 0);
  CHECK(lines[0].find(" ex/s") != std::string::npos);
  CHECK(lines[0].find("| ETA ") != std::string::npos);
  CHECK(lines[4].rfind("epoch 1/3 50/100  50%", 0) == 0);
  CHECK(lines[9].rfind("epoch 1/3 100/100 100% loss 0.31 acc 0.92", 0) == 0);
  CHECK(lines[9].find("elapsed") != std::string::npos);
  CHECK(lines[9].find("ETA") == std::string::npos);
}

TEST_CASE("progress: metrics show their latest values; finish prints once") {
  std::ostringstream out;
  ProgressBar bar(4, "train", {.out = &out, .interactive = false, .print_interval_seconds = 0});
  bar.update(1, {{"loss", 2.0}});
  bar.update(1, {{"loss", 1.5}, {"acc", 0.5}});
  CHECK(bar.status().find("loss 1.5 acc 0.5") != std::string::npos);
  CHECK(bar.status().find(" it/s") != std::string::npos);
  bar.finish();
  bar.finish();
  bar.update(1);
  std::vector<std::string> lines = lines_of(out.str());
  CHECK(lines.size() == 3);  // 25%, 50%, and the final line
  CHECK(lines.back().rfind("train 2/4  50% loss 1.5 acc 0.5", 0) == 0);
  strata::testing::expect_error<ValueError>([] { ProgressBar(-1, "x"); }, "[ProgressBar]", {"-1"});
}

TEST_CASE("progress: on a terminal, one line redrawn to the given width") {
  std::ostringstream out;
  {
    ProgressBar bar(3, "epoch", {.out = &out, .interactive = true, .width = 100});
    bar.update(3, {{"loss", 0.25}});
  }
  std::string text = out.str();
  CHECK(text.front() == '\r');
  CHECK(text.back() == '\n');
  CHECK(count_of(text, "\n") == 1);
  std::string line = text.substr(text.rfind('\r') + 1);
  CHECK(line.size() == 100);  // 99 columns and the newline
  CHECK(line.rfind("epoch [", 0) == 0);
  CHECK(line.find("#]") != std::string::npos);
  CHECK(line.find("loss 0.25") != std::string::npos);
}

TEST_CASE("progress: LossCurve writes CSV") {
  LossCurve curve;
  curve.record(0, 0, 2.5, 0.1);
  curve.record(10, 0, 1.25);
  curve.record(20, 1, 0.5, 0.75);
  CHECK(curve.points().size() == 3);
  CHECK(curve.to_csv() == "step,epoch,loss,accuracy\n0,0,2.5,0.10000000000000001\n10,0,1.25,\n20,1,0.5,0.75\n");
  std::string path = (std::filesystem::temp_directory_path() / "strata_test_progress_curve.csv").string();
  curve.write_csv(path);
  CHECK(read_text(path) == curve.to_csv());
  std::remove(path.c_str());
  strata::testing::expect_error<ValueError>([&] { curve.write_csv("/nonexistent/dir/x.csv"); }, "[LossCurve::write_csv]",
                                            {"/nonexistent/dir/x.csv"});
}

TEST_CASE("progress: LossCurve writes an SVG chart with loss and accuracy lines") {
  LossCurve curve;
  for (int step = 0; step < 25; ++step) curve.record(step * 4, step / 5, 3.0 / (1 + step), step % 2 ? std::optional(0.04 * step) : std::nullopt);
  std::string path = (std::filesystem::temp_directory_path() / "strata_test_progress_curve.svg").string();
  curve.write_svg(path, "Digits <MLP>");
  std::string svg = read_text(path);
  std::remove(path.c_str());
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("Digits &lt;MLP&gt;") != std::string::npos);
  CHECK(count_of(svg, "<polyline") == 2);
  auto points_of = [&](const std::string& name) {
    size_t at = svg.find("class=\"" + name + "\"");
    REQUIRE(at != std::string::npos);
    size_t begin = svg.find("points=\"", at) + 8;
    std::string points = svg.substr(begin, svg.find('"', begin) - begin);
    return count_of(points, ",");
  };
  CHECK(points_of("loss") == 25);
  CHECK(points_of("accuracy") == 12);
  CHECK(svg.find(">step</text>") != std::string::npos);
  CHECK(svg.find(">accuracy</text>") != std::string::npos);
  CHECK(count_of(svg, "<text") > 10);  // tick labels
  CHECK(count_of(svg, "<") == count_of(svg, ">"));

  LossCurve single;
  single.record(5, 0, 1.0);
  std::string one_point = single.to_svg();
  CHECK(one_point.find("nan") == std::string::npos);
  CHECK(count_of(one_point, "<polyline") == 1);
  CHECK(LossCurve().to_svg().find("<svg") == 0);
}

TEST_CASE("progress: a LossCurve write that fails keeps the previous file") {
  auto folder = std::filesystem::temp_directory_path() / "strata_test_progress_torn";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  std::string path = (folder / "curve.csv").string();
  LossCurve small;
  small.record(0, 0, 1.0);
  small.write_csv(path);
  auto previous = strata::testing::file_bytes(path);
  LossCurve large;
  for (int step = 0; step < 10'000; ++step) large.record(step, 0, 1.0 / (step + 3), 0.5);
  {
    strata::testing::FileSizeLimitScope limit(64 * 1024);
    strata::testing::expect_error<ValueError>([&] { large.write_csv(path); }, "[LossCurve::write_csv] cannot write");
    strata::testing::expect_error<ValueError>([&] { large.write_svg(path); }, "[LossCurve::write_svg] cannot write");
  }
  CHECK(strata::testing::file_bytes(path) == previous);
  CHECK(strata::testing::files_starting_with(folder, "curve").size() == 1);
}
