#include <strata/nn/progress.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <sys/ioctl.h>
#include <unistd.h>

#include <strata/tensor/errors.h>
#include <strata/tensor/file_io.h>

namespace strata {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// "0:07", "12:30", "1:02:03".
std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto total = static_cast<int64_t>(seconds + 0.5);
  char buffer[32];
  if (total >= 3600)
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", static_cast<long long>(total / 3600),
                  static_cast<long long>(total / 60 % 60), static_cast<long long>(total % 60));
  else
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld", static_cast<long long>(total / 60), static_cast<long long>(total % 60));
  return buffer;
}

int terminal_width() {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    int value = std::atoi(columns);
    if (value > 0) return value;
  }
  return 80;
}

}  // namespace

ProgressBar::ProgressBar(int64_t total, std::string label, ProgressBarOptions options)
    : total_(total), label_(std::move(label)), options_(options), out_(options.out ? options.out : &std::cout) {
  STRATA_CHECK_VALUE(total >= 0, "[ProgressBar] total must be non-negative, got ", total);
  interactive_ = options_.interactive.value_or(out_ == &std::cout && isatty(STDOUT_FILENO));
  start_ = last_print_ = std::chrono::steady_clock::now();
}

ProgressBar::~ProgressBar() {
  try {
    finish();
  } catch (...) {  // a destructor must not throw; a failed final print is not worth a crash
  }
}

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressBar::update(int64_t steps, const Metrics& metrics) {
  if (finished_) return;
  count_ += steps;
  for (const auto& metric : metrics) {  // not a structured binding: clang 14 cannot capture those
    auto it = std::find_if(metrics_.begin(), metrics_.end(), [&](const auto& m) { return m.first == metric.first; });
    if (it == metrics_.end()) metrics_.push_back(metric);
    else it->second = metric.second;
  }
  if (total_ > 0 && count_ >= total_) {
    finish();
    return;
  }
  auto now = std::chrono::steady_clock::now();
  double since_print = std::chrono::duration<double>(now - last_print_).count();
  if (interactive_) {
    if (since_print >= 0.1) draw();  // at most ten redraws a second
    return;
  }
  int64_t decile = total_ > 0 ? count_ * 10 / total_ : 0;
  bool by_time = options_.print_interval_seconds > 0 && since_print >= options_.print_interval_seconds;
  if (decile > printed_decile_ || by_time) {
    printed_decile_ = std::max(printed_decile_, decile);
    draw();
  }
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  draw();
  if (interactive_) *out_ << '\n';
  out_->flush();
}

std::string ProgressBar::status() const {
  std::ostringstream text;
  text << label_ << ' ' << count_;
  if (total_ > 0) text << '/' << total_ << ' ' << format("%3.0f%%", 100.0 * std::min(count_, total_) / total_);
  for (const auto& [name, value] : metrics_) text << ' ' << name << ' ' << format("%.4g", value);
  double elapsed = elapsed_seconds();
  if (elapsed > 0 && count_ > 0) {
    double rate = count_ * (options_.examples_per_step > 0 ? options_.examples_per_step : 1) / elapsed;
    text << " | " << format(rate >= 100 ? "%.0f" : "%.3g", rate) << (options_.examples_per_step > 0 ? " ex/s" : " it/s");
  }
  if (finished_) text << " | " << format_duration(elapsed) << " elapsed";
  else if (total_ > 0 && count_ > 0) text << " | ETA " << format_duration(elapsed / count_ * (total_ - count_));
  return text.str();
}

void ProgressBar::draw() {
  last_print_ = std::chrono::steady_clock::now();
  std::string line = status();
  if (!interactive_) {
    *out_ << line << '\n';
    out_->flush();
    return;
  }
  // One line, redrawn: a bar fills whatever width the text leaves; longer text is cut.
  size_t width = static_cast<size_t>(std::max(options_.width > 0 ? options_.width : terminal_width(), 20)) - 1;
  size_t room = width > line.size() + 3 ? std::min<size_t>(width - line.size() - 3, 30) : 0;
  if (room >= 5 && total_ > 0) {
    auto filled = static_cast<size_t>(room * std::min(count_, total_) / total_);
    std::string bar = " [" + std::string(filled, '#') + std::string(room - filled, '.') + "]";
    line.insert(label_.size(), bar);
  }
  if (line.size() > width) line.resize(width);
  line.append(width - line.size(), ' ');
  *out_ << '\r' << line;
  out_->flush();
}

// ---- LossCurve -----------------------------------------------------------------------------

void LossCurve::record(int64_t step, int64_t epoch, double loss, std::optional<double> accuracy) {
  points_.push_back({step, epoch, loss, accuracy});
}

std::string LossCurve::to_csv() const {
  std::ostringstream csv;
  csv.precision(17);
  csv << "step,epoch,loss,accuracy\n";
  for (const Point& point : points_) {
    csv << point.step << ',' << point.epoch << ',' << point.loss << ',';
    if (point.accuracy) csv << *point.accuracy;
    csv << '\n';
  }
  return csv.str();
}

namespace {

// Replaces the file only once the new text is all written (see tensor/file_io.h).
void write_text_file(const std::string& path, const std::string& text, const char* op) {
  detail::write_file_atomically(path, [&](detail::FileSink& sink) { sink.write(text); }, op);
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// An axis range widened to "nice" tick values (1, 2 or 5 times a power of ten).
struct Axis {
  double low, high, tick;
  Axis(double min_value, double max_value, int target_ticks = 5) {
    if (!(max_value > min_value)) {  // one value (or none): give it room
      double pad = std::abs(min_value) > 0 ? std::abs(min_value) * 0.1 : 1;
      min_value -= pad;
      max_value += pad;
    }
    double raw = (max_value - min_value) / target_ticks;
    double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double fraction = raw / magnitude;
    tick = (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * magnitude;
    low = std::floor(min_value / tick) * tick;
    high = std::ceil(max_value / tick) * tick;
  }
  double fraction(double value) const { return (value - low) / (high - low); }
};

std::string tick_label(double value) { return format("%g", std::abs(value) < 1e-12 ? 0.0 : value); }

// The smallest and largest finite values seen.
struct Range {
  double low = 0, high = 1;
  bool any = false;
  void add(double value) {
    if (!std::isfinite(value)) return;
    low = any ? std::min(low, value) : value;
    high = any ? std::max(high, value) : value;
    any = true;
  }
};

// Note [LossCurve chart layout]
// An 800x450 canvas; the plot sits inside fixed margins, with step on the x axis, loss on the
// left axis and accuracy (when any was recorded) on the right one. Lines are SVG polylines,
// one vertex per finite value, so a reader (or a test) can count the points.
constexpr double kWidth = 800, kHeight = 450, kLeft = 70, kRight = 70, kTop = 50, kBottom = 60;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
constexpr const char* kLossColor = "#1f77b4";
constexpr const char* kAccuracyColor = "#d62728";

class Chart {
 public:
  Chart(const Axis& x, const Axis& loss, const Axis& accuracy, bool has_accuracy)
      : x_(x), loss_(loss), accuracy_(accuracy), has_accuracy_(has_accuracy) {}

  double x_of(double step) const { return kLeft + kPlotWidth * x_.fraction(step); }
  double y_of(const Axis& axis, double value) const { return kTop + kPlotHeight * (1 - axis.fraction(value)); }
  const Axis& loss_axis() const { return loss_; }
  const Axis& accuracy_axis() const { return accuracy_; }

  void write_frame(std::ostream& svg, const std::string& title) const {
    svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
        << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        << "<text x=\"" << kWidth / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">" << xml_escape(title)
        << "</text>\n";
    for (double v = x_.low; v <= x_.high + x_.tick / 2; v += x_.tick)
      svg << "<line x1=\"" << x_of(v) << "\" y1=\"" << kTop << "\" x2=\"" << x_of(v) << "\" y2=\"" << kTop + kPlotHeight
          << "\" stroke=\"#eee\"/><text x=\"" << x_of(v) << "\" y=\"" << kTop + kPlotHeight + 18
          << "\" text-anchor=\"middle\">" << tick_label(v) << "</text>\n";
    for (double v = loss_.low; v <= loss_.high + loss_.tick / 2; v += loss_.tick)
      svg << "<line x1=\"" << kLeft << "\" y1=\"" << y_of(loss_, v) << "\" x2=\"" << kLeft + kPlotWidth << "\" y2=\""
          << y_of(loss_, v) << "\" stroke=\"#eee\"/><text x=\"" << kLeft - 8 << "\" y=\"" << y_of(loss_, v) + 4
          << "\" text-anchor=\"end\">" << tick_label(v) << "</text>\n";
    if (has_accuracy_)
      for (double v = accuracy_.low; v <= accuracy_.high + accuracy_.tick / 2; v += accuracy_.tick)
        svg << "<text x=\"" << kLeft + kPlotWidth + 8 << "\" y=\"" << y_of(accuracy_, v) + 4 << "\" fill=\""
            << kAccuracyColor << "\">" << tick_label(v) << "</text>\n";
    svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotWidth << "\" height=\"" << kPlotHeight
        << "\" fill=\"none\" stroke=\"black\"/>\n"
        << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << kHeight - 15 << "\" text-anchor=\"middle\">step</text>\n"
        << "<text transform=\"translate(20 " << kTop + kPlotHeight / 2 << ") rotate(-90)\" text-anchor=\"middle\" fill=\""
        << kLossColor << "\">loss</text>\n";
    if (has_accuracy_)
      svg << "<text transform=\"translate(" << kWidth - 20 << ' ' << kTop + kPlotHeight / 2
          << ") rotate(90)\" text-anchor=\"middle\" fill=\"" << kAccuracyColor << "\">accuracy</text>\n";
  }

  // vertices: (step, value) pairs with finite values.
  void write_line(std::ostream& svg, const char* name, const char* color, const Axis& axis,
                  const std::vector<std::pair<double, double>>& vertices) const {
    svg << "<polyline class=\"" << name << "\" fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < vertices.size(); ++i)
      svg << (i ? " " : "") << format("%.1f", x_of(vertices[i].first)) << ','
          << format("%.1f", y_of(axis, vertices[i].second));
    svg << "\"/>\n";
  }

  void write_legend_entry(std::ostream& svg, int row, const char* color, const char* label) const {
    double y = kTop + 14 + 18 * row;
    svg << "<line x1=\"" << kLeft + 10 << "\" y1=\"" << y << "\" x2=\"" << kLeft + 30 << "\" y2=\"" << y
        << "\" stroke=\"" << color << "\" stroke-width=\"2\"/><text x=\"" << kLeft + 35 << "\" y=\"" << y + 4 << "\">"
        << label << "</text>\n";
  }

 private:
  Axis x_, loss_, accuracy_;
  bool has_accuracy_;
};

}  // namespace

std::string LossCurve::to_svg(const std::string& title) const {
  Range steps, losses, accuracies;
  std::vector<std::pair<double, double>> loss_line, accuracy_line;
  for (const Point& p : points_) {
    steps.add(static_cast<double>(p.step));
    losses.add(p.loss);
    if (std::isfinite(p.loss)) loss_line.emplace_back(p.step, p.loss);
    if (p.accuracy && std::isfinite(*p.accuracy)) {
      accuracies.add(*p.accuracy);
      accuracy_line.emplace_back(p.step, *p.accuracy);
    }
  }
  if (steps.high == steps.low) steps.high = steps.low + 1;
  // Accuracies in [0, 1] get the full [0, 1] axis, so runs compare at a glance.
  if (accuracies.low >= 0 && accuracies.high <= 1) accuracies.low = 0, accuracies.high = 1;
  Chart chart(Axis(steps.low, steps.high, 8), Axis(losses.low, losses.high), Axis(accuracies.low, accuracies.high),
              accuracies.any);

  std::ostringstream svg;
  chart.write_frame(svg, title);
  if (losses.any) chart.write_line(svg, "loss", kLossColor, chart.loss_axis(), loss_line);
  if (accuracies.any) chart.write_line(svg, "accuracy", kAccuracyColor, chart.accuracy_axis(), accuracy_line);
  chart.write_legend_entry(svg, 0, kLossColor, "loss");
  if (accuracies.any) chart.write_legend_entry(svg, 1, kAccuracyColor, "accuracy");
  svg << "</svg>\n";
  return svg.str();
}

void LossCurve::write_csv(const std::string& path) const { write_text_file(path, to_csv(), "LossCurve::write_csv"); }

void LossCurve::write_svg(const std::string& path, const std::string& title) const {
  write_text_file(path, to_svg(title), "LossCurve::write_svg");
}

}  // namespace strata
