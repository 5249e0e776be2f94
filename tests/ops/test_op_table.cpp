// The op table (op_table.h) run on every backend present: forward values and gradients against
// the CPU in float64, Meta against the CPU for sizes, strides and dtypes, backward on Meta, the
// dtypes each entry claims, the out= variants (op_table_out.h), and a registry check that
// every public op has an entry.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "op_table.h"
#include "op_table_entries.h"
#include "op_table_entries_2.h"
#include "op_table_entries_3.h"
#include "op_table_out.h"
#include "op_test_util.h"

namespace strata::optable {

const std::vector<OpEntry>& op_table() {
  static const std::vector<OpEntry> table = [] {
    std::vector<OpEntry> all;
    for (auto family : {&entries::creation_entries, &entries::pointwise_entries, &entries::unary_entries,
                        &entries::compare_entries, &entries::reduce_entries, &entries::linalg_entries,
                        &entries::shape_entries, &entries::index_entries, &entries::nn_entries, &entries::conv_entries,
                        &entries::loss_entries, &entries::optim_entries})
      for (OpEntry& e : family()) all.push_back(std::move(e));
    return all;
  }();
  return table;
}

const std::vector<CoveredOp>& covered_ops() {
  static const std::vector<CoveredOp> covered = {
      {"strata::_conv2d_backward", "strata::conv2d"},
      {"strata::max_pool2d_with_indices_backward", "strata::max_pool2d_with_indices"},
      {"strata::nll_loss_forward", "strata::nll_loss"},
      {"strata::nll_loss_backward", "strata::nll_loss"},
      {"strata::_softmax_backward_data", "strata::softmax.int"},
      {"strata::_log_softmax_backward_data", "strata::log_softmax.int"},
      {"strata::native_dropout", "strata::dropout"},
      {"strata::native_layer_norm", "strata::layer_norm"},
      {"strata::native_layer_norm_backward", "strata::layer_norm"},
      {"strata::embedding_dense_backward", "strata::embedding"},
  };
  return covered;
}

}  // namespace strata::optable

using namespace strata;
using namespace strata::optable;

namespace {

// Every backend present: the CPU always, CUDA when a device is there.
std::vector<Device> backends() {
  std::vector<Device> devices = {Device(kCPU)};
  if (cuda::is_available()) devices.emplace_back(kCUDA, 0);
  return devices;
}

// The entry's samples at `dtype`, made with a seed of the entry and dtype (so each run and
// each backend sees the same values).
std::vector<Sample> samples_of(const OpEntry& entry, ScalarType dtype) {
  sample_seed() = std::hash<std::string>{}(entry.name) % 100000 * 100 + static_cast<uint64_t>(dtype) * 10000000;
  return entry.samples(dtype);
}

// The sample's bases on `device`, floating ones in float64 when `to_float64`.
tensor_list bases_of(const Sample& s, Device device, bool to_float64) {
  tensor_list bases;
  for (const Arg& arg : s.args) {
    Tensor base = arg.base;
    if (to_float64 && base.is_floating_point()) base = base.to(kFloat64);
    if (!device.is_cpu()) base = base.to(TensorOptions(device));
    bases.push_back(base);
  }
  return bases;
}

// An integral sample's bases with its data (the args of the sample's dtype, not indices) in
// float64, for a reference of the floating results integral inputs give (sqrt, div...).
tensor_list integral_as_float64(const Sample& s, ScalarType dtype) {
  tensor_list bases;
  for (const Arg& arg : s.args) bases.push_back(arg.base.dtype() == dtype && !arg.index ? arg.base.to(kFloat64) : arg.base);
  return bases;
}

// The sample's inputs as the op sees them: each base with its arg's layout applied.
tensor_list laid_out(const Sample& s, const tensor_list& bases) {
  tensor_list inputs;
  for (size_t i = 0; i < s.args.size(); ++i) inputs.push_back(layout_view(bases[i], s.args[i].layout, s.args[i].sizes));
  return inputs;
}

tensor_list run(const Sample& s, const tensor_list& bases, const Env& env) { return s.call(laid_out(s, bases), env); }

std::string where_(const OpEntry& entry, ScalarType dtype, const Sample& s, Device device) {
  std::ostringstream out;
  out << entry.name << " " << dtype_name(dtype) << " sample \"" << s.desc << "\" on " << device;
  return out.str();
}

struct Tolerance {
  double atol, rtol;
};

// The coarsest of the dtypes' tolerances (exact when none is floating).
Tolerance tolerance_for(std::initializer_list<ScalarType> dtypes, double scale) {
  Tolerance t{0, 0};
  for (ScalarType dtype : dtypes) {
    Tolerance d{0, 0};
    if (dtype == kFloat64) d = {1e-7, 1e-7};
    else if (dtype == kFloat32) d = {1e-4, 1e-4};
    else if (dtype == kFloat16) d = {1e-2, 1e-2};
    else if (dtype == kBFloat16) d = {4e-2, 4e-2};
    t = {std::max(t.atol, d.atol * scale), std::max(t.rtol, d.rtol * scale)};
  }
  return t;
}

// "" when `actual` matches `expected` (sizes, then values within tolerance; NaN matches NaN).
std::string compare_values(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  if (actual.sizes() != expected.sizes()) {
    std::ostringstream out;
    out << "sizes " << actual.sizes() << " but the reference has " << expected.sizes();
    return out.str();
  }
  const std::vector<double> a = testing::values_of(actual.to(TensorOptions(Device(kCPU))));
  const std::vector<double> e = testing::values_of(expected.to(TensorOptions(Device(kCPU))));
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;
    if (std::abs(a[i] - e[i]) <= tol.atol + tol.rtol * std::abs(e[i])) continue;
    std::ostringstream out;
    out << "element " << i << " is " << a[i] << ", the float64 reference " << e[i] << " (atol " << tol.atol << ", rtol "
        << tol.rtol << ")";
    return out.str();
  }
  return "";
}

// Runs fn, turning an exception into a failure naming `context`. False when it threw.
template <class Fn>
bool guarded(const std::string& context, Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const std::exception& error) {
    FAIL_CHECK(context << ": threw " << std::string(error.what()));
    return false;
  }
}

// The positions of the sample's differentiable args (the entry's, where floating).
std::vector<size_t> grad_positions(const OpEntry& entry, const Sample& s) {
  std::vector<size_t> positions;
  for (size_t p : entry.grad_inputs)
    if (p < s.args.size() && s.args[p].base.is_floating_point()) positions.push_back(p);
  return positions;
}

// Gradients of the entry's differentiable outputs with respect to the args at `positions`,
// for a fixed grad_output of multiples of 1/8 in [-1, 1] (exact in every dtype; shape and
// dtype only on Meta). Undefined where an input is unused; empty when no output requires grad
// (a copy into an integral tensor, say: the per-entry counts catch an entry where none does).
tensor_list gradients(const OpEntry& entry, const Sample& s, const std::vector<size_t>& positions, Device device,
                      ScalarType dtype, bool to_float64) {
  tensor_list bases = bases_of(s, device, to_float64);
  tensor_list leaves;
  for (size_t p : positions) {
    bases[p] = bases[p].detach().requires_grad_();
    leaves.push_back(bases[p]);
  }
  const tensor_list outputs = run(s, bases, Env{device, to_float64 ? kFloat64 : dtype});
  tensor_list differentiable, grad_outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const bool listed = entry.grad_outputs.empty() ||
                        std::find(entry.grad_outputs.begin(), entry.grad_outputs.end(), i) != entry.grad_outputs.end();
    const Tensor& out = outputs[i];
    if (!listed || !out.defined() || !out.requires_grad() || !out.is_floating_point()) continue;
    differentiable.push_back(out);
    if (device.is_meta()) {
      grad_outputs.push_back(empty(out.sizes(), out.options()));
    } else {
      manual_seed(1000 + i);
      grad_outputs.push_back((randint(-8, 9, out.sizes(), kFloat64) / 8.0).to(out.options()));
    }
  }
  if (differentiable.empty()) return {};
  return autograd::grad(differentiable, leaves, grad_outputs, false, false, /*allow_unused=*/true);
}

Tensor or_zeros(const Tensor& grad, const Tensor& like) { return grad.defined() ? grad : zeros_like(like); }

// "" when a Meta result has the CPU result's sizes, strides and dtype.
std::string meta_mismatch(const Tensor& meta, const Tensor& cpu) {
  std::ostringstream out;
  if (!meta.is_meta()) out << "the result is on " << meta.device() << ", not meta; ";
  if (meta.dtype() != cpu.dtype()) out << "dtype " << meta.dtype() << " but the CPU gives " << cpu.dtype() << "; ";
  if (meta.sizes() != cpu.sizes()) out << "sizes " << meta.sizes() << " but the CPU gives " << cpu.sizes() << "; ";
  else if (meta.strides() != cpu.strides()) out << "strides " << meta.strides() << " but the CPU gives " << cpu.strides();
  return out.str();
}

}  // namespace

TEST_CASE("op table: forward values on every backend match the CPU in float64") {
  int compared = 0;
  for (const OpEntry& entry : op_table()) {
    for (ScalarType dtype : entry.dtypes) {
      const bool floating = is_floating_point(dtype);
      for (const Sample& s : samples_of(entry, dtype)) {
        const std::string context = where_(entry, dtype, s, Device(kCPU));
        tensor_list cpu, reference;
        if (!guarded(context, [&] { cpu = run(s, bases_of(s, Device(kCPU), false), Env{Device(kCPU), dtype}); })) continue;
        if (entry.values == Values::Deterministic && floating &&
            !guarded(context + " (float64 reference)",
                     [&] { reference = run(s, bases_of(s, Device(kCPU), true), Env{Device(kCPU), kFloat64}); }))
          continue;
        // Integral samples with floating results (sqrt of int, int / int, promotion) are checked
        // against the op on the inputs in float64 too; bool samples are not (their masks and
        // conditions must stay bool).
        const bool integral_data = !floating && dtype != kBool && entry.values == Values::Deterministic &&
                                   std::any_of(cpu.begin(), cpu.end(), [](const Tensor& t) { return t.is_floating_point(); });
        if (integral_data) {
          try {
            reference = run(s, integral_as_float64(s, dtype), Env{Device(kCPU), dtype});
          } catch (const std::exception&) {
            reference.clear();  // the op takes no float64 in place of this integral input
          }
        }
        for (Device device : backends()) {
          INFO(where_(entry, dtype, s, device));
          tensor_list out = cpu;
          if (!device.is_cpu() && !guarded(where_(entry, dtype, s, device),
                                           [&] { out = run(s, bases_of(s, device, false), Env{device, dtype}); }))
            continue;
          REQUIRE(out.size() == cpu.size());
          for (size_t i = 0; i < out.size(); ++i) {
            INFO("output " << i);
            CHECK(out[i].dtype() == cpu[i].dtype());
            CHECK(out[i].sizes() == cpu[i].sizes());
            CHECK(out[i].device() == device);
            if (entry.values == Values::Random && entry.check_random) {
              const tensor_list inputs = laid_out(s, bases_of(s, Device(kCPU), false));
              tensor_list on_cpu;
              for (const Tensor& t : out) on_cpu.push_back(t.to(TensorOptions(Device(kCPU))));
              entry.check_random(inputs, on_cpu);
              break;
            }
            if (entry.values != Values::Deterministic) continue;
            if (!floating) {  // integral and bool samples: exact against the CPU (floating results
                              // within their dtype's tolerance: the devices' exp and sin differ)...
              if (!device.is_cpu()) {
                const Tolerance exact{0, 0};
                const Tolerance tolerance = out[i].is_floating_point()
                                                ? tolerance_for({out[i].dtype()}, entry.tolerance_scale)
                                                : exact;
                const std::string mismatch = compare_values(out[i], cpu[i], tolerance);
                CHECK_MESSAGE(mismatch == "", mismatch);
              }
              if (reference.size() == out.size() && out[i].is_floating_point()) {  // ...and floating results in float64
                const std::string mismatch =
                    compare_values(out[i], reference[i], tolerance_for({out[i].dtype()}, entry.tolerance_scale));
                CHECK_MESSAGE(mismatch == "", mismatch);
                ++compared;
              }
              continue;
            }
            const Tolerance tol = tolerance_for({dtype, out[i].dtype()}, entry.tolerance_scale);
            const std::string mismatch = compare_values(out[i], reference[i], tol);
            CHECK_MESSAGE(mismatch == "", mismatch);
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("op table: gradients on every backend match the CPU in float64") {
  int compared = 0;
  for (const OpEntry& entry : op_table()) {
    if (!entry.differentiable() || entry.values != Values::Deterministic) continue;
    const int before = compared;
    for (ScalarType dtype : entry.dtypes) {
      if (!is_floating_point(dtype)) continue;
      for (const Sample& s : samples_of(entry, dtype)) {
        const std::vector<size_t> positions = grad_positions(entry, s);
        if (positions.empty()) continue;
        tensor_list reference;
        if (!guarded(where_(entry, dtype, s, Device(kCPU)) + " (float64 backward)",
                     [&] { reference = gradients(entry, s, positions, Device(kCPU), dtype, true); }))
          continue;
        for (Device device : backends()) {
          const std::string context = where_(entry, dtype, s, device) + " backward";
          INFO(context);
          tensor_list grads;
          if (!guarded(context, [&] { grads = gradients(entry, s, positions, device, dtype, false); })) continue;
          CHECK(grads.empty() == reference.empty());
          if (grads.empty() || reference.empty()) continue;
          REQUIRE(grads.size() == positions.size());
          for (size_t i = 0; i < grads.size(); ++i) {
            INFO("gradient of input " << positions[i]);
            const Tensor& base = s.args[positions[i]].base;
            if (grads[i].defined()) {
              CHECK(grads[i].dtype() == base.dtype());
              CHECK(grads[i].device() == device);
            }
            const Tensor expected = or_zeros(reference[i], base.to(kFloat64));
            const Tolerance tol = tolerance_for({dtype}, 2 * entry.tolerance_scale);
            const std::string mismatch = compare_values(or_zeros(grads[i], base), expected, tol);
            CHECK_MESSAGE(mismatch == "", mismatch);
            ++compared;
          }
        }
      }
    }
    CHECK_MESSAGE(compared > before, entry.name << " is differentiable but no sample's gradient was compared");
  }
  CHECK(compared > 500);
}

TEST_CASE("op table: ops without derivatives take inputs that require grad and give results that do not") {
  int checked = 0;
  for (const OpEntry& entry : op_table()) {
    if (entry.differentiable()) continue;
    for (ScalarType dtype : entry.dtypes) {
      if (!is_floating_point(dtype)) continue;
      for (const Sample& s : samples_of(entry, dtype)) {
        const std::string context = where_(entry, dtype, s, Device(kCPU)) + " with inputs requiring grad";
        INFO(context);
        tensor_list bases = bases_of(s, Device(kCPU), false);
        bool any = false;
        for (Tensor& base : bases)
          if (base.is_floating_point()) base = base.detach().requires_grad_(), any = true;
        if (!any) continue;
        tensor_list outputs;
        if (!guarded(context, [&] { outputs = run(s, bases, Env{Device(kCPU), dtype}); })) continue;
        for (const Tensor& out : outputs) CHECK(!(out.defined() && out.requires_grad()));
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("op table: float64 gradients pass gradcheck on the CPU") {
  // The other tests compare backends and dtypes with the float64 CPU result; this one checks
  // that result itself against finite differences.
  int checked = 0;
  for (const OpEntry& entry : op_table()) {
    if (!entry.differentiable() || entry.values != Values::Deterministic) continue;
    if (std::find(entry.dtypes.begin(), entry.dtypes.end(), kFloat64) == entry.dtypes.end()) continue;
    for (const Sample& s : samples_of(entry, kFloat64)) {
      const std::vector<size_t> positions = grad_positions(entry, s);
      if (positions.empty() || !s.true_gradient) continue;
      const std::string context = where_(entry, kFloat64, s, Device(kCPU)) + " gradcheck";
      INFO(context);
      tensor_list inputs = bases_of(s, Device(kCPU), false);
      for (size_t p : positions) inputs[p] = inputs[p].detach().clone().requires_grad_();
      const auto fn = [&entry, &s](const tensor_list& in) {
        const tensor_list outputs = run(s, in, Env{Device(kCPU), kFloat64});
        tensor_list picked;
        for (size_t i = 0; i < outputs.size(); ++i)
          if ((entry.grad_outputs.empty() ||
               std::find(entry.grad_outputs.begin(), entry.grad_outputs.end(), i) != entry.grad_outputs.end()) &&
              outputs[i].dtype() == kFloat64)
            picked.push_back(outputs[i]);
        return picked;
      };
      bool any_output = false;
      if (!guarded(context, [&] { any_output = !fn(inputs).empty(); }) || !any_output) continue;  // no float64 output
      guarded(context, [&] {
        const autograd::GradcheckResult result = autograd::gradcheck(fn, inputs);
        CHECK_MESSAGE(static_cast<bool>(result), result.message());
      });
      ++checked;
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("op table: Meta gives the CPU's sizes, strides and dtypes") {
  int compared = 0;
  for (const OpEntry& entry : op_table()) {
    for (ScalarType dtype : entry.dtypes) {
      for (const Sample& s : samples_of(entry, dtype)) {
        const std::string context = where_(entry, dtype, s, Device(kMeta));
        INFO(context);
        tensor_list cpu, meta;
        if (!guarded(context, [&] { cpu = run(s, bases_of(s, Device(kCPU), false), Env{Device(kCPU), dtype}); })) continue;
        if (!guarded(context, [&] { meta = run(s, bases_of(s, Device(kMeta), false), Env{Device(kMeta), dtype}); })) continue;
        REQUIRE(meta.size() == cpu.size());
        for (size_t i = 0; i < meta.size(); ++i) {
          INFO("output " << i);
          const std::string mismatch = meta_mismatch(meta[i], cpu[i]);
          CHECK_MESSAGE(mismatch == "", mismatch);
          ++compared;
        }
      }
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("op table: backward of every differentiable op runs on Meta and gives Meta gradients") {
  int checked = 0;
  for (const OpEntry& entry : op_table()) {
    if (!entry.differentiable()) continue;
    const int before = checked;
    for (ScalarType dtype : entry.dtypes) {
      if (!is_floating_point(dtype)) continue;
      for (const Sample& s : samples_of(entry, dtype)) {
        const std::vector<size_t> positions = grad_positions(entry, s);
        if (positions.empty()) continue;
        const std::string context = where_(entry, dtype, s, Device(kMeta)) + " backward";
        INFO(context);
        tensor_list cpu, meta;
        if (!guarded(context + " (CPU)", [&] { cpu = gradients(entry, s, positions, Device(kCPU), dtype, false); })) continue;
        if (!guarded(context, [&] { meta = gradients(entry, s, positions, Device(kMeta), dtype, false); })) continue;
        CHECK(meta.empty() == cpu.empty());
        if (meta.empty() || cpu.empty()) continue;
        REQUIRE(meta.size() == positions.size());
        for (size_t i = 0; i < meta.size(); ++i) {
          INFO("gradient of input " << positions[i]);
          const Tensor& base = s.args[positions[i]].base;
          CHECK(meta[i].defined() == cpu[i].defined());
          if (!meta[i].defined()) continue;
          CHECK(meta[i].is_meta());
          CHECK(meta[i].sizes() == base.sizes());
          CHECK(meta[i].dtype() == base.dtype());
          ++checked;
        }
      }
    }
    CHECK_MESSAGE(checked > before, entry.name << " is differentiable but no sample gave a Meta gradient");
  }
  CHECK(checked > 500);
}

TEST_CASE("op table: each entry supports exactly the dtypes it lists") {
  // A dtype outside an entry's list must be refused by some sample (a TypeError, say); one in
  // the list runs every sample (the forward test checks that). With STRATA_OPTABLE_DISCOVER
  // set, prints the table's size and the dtypes each entry's samples run at instead.
  if (!std::getenv("STRATA_OPTABLE_DISCOVER")) {
    for (const OpEntry& entry : op_table()) {
      for (ScalarType dtype : kAllTypes) {
        if (std::find(entry.dtypes.begin(), entry.dtypes.end(), dtype) != entry.dtypes.end()) continue;
        bool refused = false;
        for (const Sample& s : samples_of(entry, dtype)) {
          try {
            run(s, bases_of(s, Device(kCPU), false), Env{Device(kCPU), dtype});
          } catch (const std::exception&) {
            refused = true;
            break;
          }
        }
        CHECK_MESSAGE(refused, entry.name << " runs every sample at " << dtype_name(dtype) << ", which it does not list");
      }
    }
    return;
  }
  size_t samples = 0, differentiable = 0;
  for (const OpEntry& entry : op_table()) {
    differentiable += entry.differentiable();
    for (ScalarType dtype : entry.dtypes) samples += samples_of(entry, dtype).size();
  }
  MESSAGE(op_table().size() << " entries (" << differentiable << " differentiable), " << covered_ops().size()
                            << " ops covered through them, " << samples << " samples over all dtypes");
  for (const OpEntry& entry : op_table()) {
    std::string supported;
    for (ScalarType dtype : kAllTypes) {
      bool ok = true;
      std::string why;
      for (const Sample& s : samples_of(entry, dtype)) {
        try {
          run(s, bases_of(s, Device(kCPU), false), Env{Device(kCPU), dtype});
        } catch (const std::exception& e) {
          ok = false;
          why = e.what();
          break;
        }
      }
      if (ok) supported += std::string(dtype_name(dtype)) + " ";
      else MESSAGE(entry.name << " " << dtype_name(dtype) << ": " << why.substr(0, 120));
    }
    MESSAGE(entry.name << ": " << supported);
  }
}

// ---------------------------------------------------------------------------------------
// out= variants (op_table_out.h).

const OpEntry& entry_named(const std::string& name) {
  for (const OpEntry& entry : op_table())
    if (entry.name == name) return entry;
  throw std::runtime_error("no op table entry " + name);
}

// The sample's inputs as the op sees them, on `device`.
tensor_list inputs_of(const Sample& s, Device device) { return laid_out(s, bases_of(s, device, false)); }

// An out of `like`'s sizes and dtype with other strides than a fresh tensor (the last two
// dims swapped in memory), so an out= call that reallocated it would show.
Tensor strided_like(const Tensor& like) {
  if (like.dim() < 2) return empty(like.sizes(), like.options());
  std::vector<int64_t> sizes(like.sizes().begin(), like.sizes().end());
  std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
  return empty(sizes, like.options()).transpose(-2, -1);
}

TEST_CASE("op table: out= variants give the functional result, into an empty out or a strided one, on every backend and Meta") {
  int checked = 0;
  for (const OutVariant& v : out_variants()) {
    const OpEntry& entry = entry_named(v.functional);
    const int before = checked;
    std::vector<Device> devices = backends();
    devices.emplace_back(kMeta);
    for (ScalarType dtype : entry.dtypes) {
      for (const Sample& s : samples_of(entry, dtype)) {
        for (Device device : devices) {
          const tensor_list in = inputs_of(s, device);
          Tensor expected;
          try {
            expected = v.call(in);
          } catch (const std::exception&) {
            continue;  // arguments the functional form refuses (cat of shapes that differ on dim 0...)
          }
          const std::string context = v.name + " on the args of " + where_(entry, dtype, s, device);
          INFO(context);
          Tensor out = empty({0}, expected.options());
          if (!guarded(context + " into an empty out", [&] { v.call_out(out, in); })) continue;
          CHECK(out.dtype() == expected.dtype());
          CHECK(out.device() == device);
          CHECK(out.sizes() == expected.sizes());
          // Within the dtypes' tolerance, not bit for bit: under the sanitizer build (-O1, no
          // -march=native) cos.out of integer inputs differed from cos in the last bit (the
          // cause is not traced; the default build agrees exactly).
          const Tolerance tol = tolerance_for({dtype, expected.dtype()}, entry.tolerance_scale);
          if (!device.is_meta()) {
            const std::string mismatch = compare_values(out, expected, tol);
            CHECK_MESSAGE(mismatch == "", mismatch);
          }

          Tensor strided = strided_like(expected);
          const std::vector<int64_t> strides(strided.strides().begin(), strided.strides().end());
          if (!guarded(context + " into a strided out", [&] { v.call_out(strided, in); })) continue;
          CHECK(strided.strides() == IntArrayRef(strides));
          if (!device.is_meta()) {
            const std::string mismatch = compare_values(strided, expected, tol);
            CHECK_MESSAGE(mismatch == "", mismatch);
          }
          ++checked;
        }
      }
    }
    CHECK_MESSAGE(checked > before, v.name << " ran on none of " << v.functional << "'s samples");
  }
  CHECK(checked > 1000);
}

TEST_CASE("op table: out= variants refuse inputs requiring grad, and an out the result cannot be cast to") {
  int checked = 0;
  for (const OutVariant& v : out_variants()) {
    const OpEntry& entry = entry_named(v.functional);
    const int before = checked;
    for (ScalarType dtype : entry.dtypes) {
      if (!is_floating_point(dtype)) continue;
      for (const Sample& s : samples_of(entry, dtype)) {
        const tensor_list in = inputs_of(s, Device(kCPU));
        Tensor expected;
        try {
          expected = v.call(in);
        } catch (const std::exception&) {
          continue;
        }
        INFO(v.name << " on the args of " << where_(entry, dtype, s, Device(kCPU)));
        tensor_list tracked = in;
        for (Tensor& t : tracked)
          if (t.is_floating_point()) t = t.detach().requires_grad_();
        Tensor out = empty({0}, expected.options());
        CHECK_THROWS_WITH_AS(v.call_out(out, tracked), doctest::Contains("don't support automatic differentiation"), Error);
        {
          NoGradGuard no_grad;
          CHECK_NOTHROW(v.call_out(out, tracked));
          CHECK(!out.requires_grad());
        }
        if (expected.is_floating_point()) {
          Tensor integral = empty(expected.sizes(), kInt64);
          CHECK_THROWS_AS(v.call_out(integral, in), Error);
        }
        ++checked;
      }
    }
    CHECK_MESSAGE(checked > before, v.name << " was checked on no floating sample");
  }
}

TEST_CASE("op table: every public op has an entry, or is covered by one") {
  std::map<std::string, const OpEntry*> entries;
  for (const OpEntry& entry : op_table()) {
    INFO("entry " << entry.name);
    CHECK_MESSAGE(entries.emplace(entry.name, &entry).second, "two entries for " << entry.name);
    CHECK_MESSAGE(has_op(entry.name), entry.name << " names no registered op");
    CHECK(!entry.dtypes.empty());
  }
  std::set<std::string> covered;
  for (const CoveredOp& c : covered_ops()) {
    INFO("covered op " << c.name);
    CHECK(has_op(c.name));
    CHECK_MESSAGE(!entries.count(c.name), c.name << " has an entry and is also listed as covered");
    CHECK_MESSAGE(entries.count(c.covered_by), c.name << " is covered by " << c.covered_by << ", which has no entry");
    covered.insert(c.name);
  }
  for (const OutVariant& v : out_variants()) {
    INFO("out= variant " << v.name);
    CHECK(has_op(v.name));
    CHECK_MESSAGE((!entries.count(v.name) && !covered.count(v.name)), v.name << " is listed twice");
    CHECK_MESSAGE(entries.count(v.functional), v.name << " runs on " << v.functional << "'s samples, which has no entry");
    covered.insert(v.name);
  }
  int public_ops = 0;
  for (const std::string& name : registered_ops()) {
    if (name.rfind("strata::", 0) != 0) continue;
    ++public_ops;
    CHECK_MESSAGE((entries.count(name) || covered.count(name)),
                  name << " has no op table entry (tests/ops/op_table_entries*.h) and no covered_by");
  }
  CHECK(public_ops >= 100);
}

// The harness itself: a deliberately wrong op (right on the CPU in float64, wrong in float32;
// a Meta kernel with the wrong strides and dtype) is caught by the checks the table runs.
TEST_CASE("op table harness: catches wrong values, Meta strides and Meta dtypes") {
  Library def("optable_selftest", Library::DEF);
  def.def("wrong(Tensor self) -> Tensor");
  Library cpu("optable_selftest", Library::IMPL, DispatchKey::CPU);
  cpu.impl("wrong", [](const Tensor& self) {
    const Tensor out = self.t().contiguous().t();  // column-major: strides differ from Meta's
    return self.dtype() == kFloat64 ? out : out * 1.01;
  });
  Library meta("optable_selftest", Library::IMPL, DispatchKey::Meta);
  meta.impl("wrong", [](const Tensor& self) {
    return detail::make_empty(self.sizes(), self.dtype() == kFloat32 ? kFloat64 : self.dtype(), self.device());
  });
  const auto wrong = [](const Tensor& x) { return call("optable_selftest::wrong", x).to_tensor(); };
  Sample s{"[3, 4]", {make_arg({3, 4}, kFloat32)}, [wrong](const tensor_list& in, const Env&) { return tensor_list{wrong(in[0])}; }};

  const Tensor out = run(s, bases_of(s, Device(kCPU), false), Env{Device(kCPU), kFloat32})[0];
  const Tensor reference = run(s, bases_of(s, Device(kCPU), true), Env{Device(kCPU), kFloat64})[0];
  CHECK(compare_values(out, reference, tolerance_for({kFloat32}, 1)).find("the float64 reference") != std::string::npos);
  CHECK(compare_values(reference, reference, tolerance_for({kFloat64}, 1)) == "");

  const Tensor on_meta = run(s, bases_of(s, Device(kMeta), false), Env{Device(kMeta), kFloat32})[0];
  const std::string mismatch = meta_mismatch(on_meta, out);
  CHECK(mismatch.find("dtype Float64 but the CPU gives Float32") != std::string::npos);
  const Tensor meta64 = run(s, bases_of(s, Device(kMeta), true), Env{Device(kMeta), kFloat64})[0];
  CHECK(meta_mismatch(meta64, reference).find("strides [4, 1] but the CPU gives [1, 3]") != std::string::npos);
  CHECK(meta_mismatch(meta64, meta64).find("not meta") == std::string::npos);
  CHECK(meta_mismatch(reference, reference).find("not meta") != std::string::npos);

  // NaN matches NaN; sizes are compared first.
  const Tensor nan = full({2}, std::nan(""), kFloat64);
  CHECK(compare_values(nan, nan, {0, 0}) == "");
  CHECK(compare_values(nan, full({3}, 0.0, kFloat64), {0, 0}).find("sizes") == 0);
}
