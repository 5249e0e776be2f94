#pragma once
// The error catalogue's harness: a table of bad calls, each expected to throw one strata::Error
// subclass whose message starts with "[op]" and says what was wrong, leaving its inputs as they
// were (values, shape, strides, dtype, version, requires_grad, grad).
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::testing {

// Fresh values 0, 1, 2... of `sizes`.
inline Tensor counting(IntArrayRef sizes, ScalarType dtype = kFloat32) {
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  return arange(count, dtype).reshape(sizes);
}

enum class Expect { Error, Value, Type, Index, NotImplemented };

// The inputs one row watches. watch() snapshots a tensor before the bad call; check_unchanged()
// compares every snapshot with the tensor afterwards.
class Inputs {
 public:
  Tensor watch(Tensor t) {
    tensors_.push_back({t, snapshot(t)});
    return t;
  }
  // Watches every parameter of a module or optimizer, and a state read back through `read`.
  void watch_all(const tensor_list& tensors) {
    for (const Tensor& t : tensors) watch(t);
  }
  void watch_state(std::string name, std::function<std::map<std::string, Tensor>()> read) {
    std::map<std::string, Snapshot> before;
    for (const auto& [key, t] : read()) before[key] = snapshot(t);
    states_.push_back({std::move(name), std::move(read), std::move(before)});
  }

  void check_unchanged() const {
    for (size_t i = 0; i < tensors_.size(); ++i) {
      INFO("watched tensor " << i);
      check_same(tensors_[i].before, snapshot(tensors_[i].tensor));
    }
    for (const State& state : states_) {
      INFO("watched state " << state.name);
      std::map<std::string, Tensor> after = state.read();
      CHECK(after.size() == state.before.size());
      for (const auto& [key, snap] : state.before) {
        INFO("key " << key);
        auto it = after.find(key);
        REQUIRE(it != after.end());
        check_same(snap, snapshot(it->second), /*same_tensor=*/false);
      }
    }
  }

 private:
  struct Snapshot {
    bool defined = false;
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
    ScalarType dtype = kFloat32;
    Device device = kCPU;
    uint32_t version = 0;
    bool requires_grad = false;
    const void* data = nullptr;
    std::vector<uint8_t> values;
    bool has_grad = false;
    std::vector<uint8_t> grad_values;
  };
  struct Watched {
    Tensor tensor;
    Snapshot before;
  };
  struct State {
    std::string name;
    std::function<std::map<std::string, Tensor>()> read;
    std::map<std::string, Snapshot> before;
  };

  static std::vector<uint8_t> bytes_of(const Tensor& t) {
    if (!t.is_cpu()) return {};
    NoGradGuard no_grad;
    Tensor dense = t.detach().contiguous();
    std::vector<uint8_t> bytes(static_cast<size_t>(dense.nbytes()));
    if (!bytes.empty()) std::memcpy(bytes.data(), dense.data_ptr(), bytes.size());
    return bytes;
  }
  static Snapshot snapshot(const Tensor& t) {
    Snapshot s;
    s.defined = t.defined();
    if (!s.defined) return s;
    s.sizes = t.sizes().vec();
    s.strides = t.strides().vec();
    s.offset = t.storage_offset();
    s.dtype = t.dtype();
    s.device = t.device();
    s.version = t.version();
    s.requires_grad = t.requires_grad();
    if (t.is_cpu() && t.numel() > 0) s.data = t.data_ptr();
    s.values = bytes_of(t);
    Tensor grad = t.grad();
    s.has_grad = grad.defined();
    if (s.has_grad) s.grad_values = bytes_of(grad);
    return s;
  }
  // A state read back may hold fresh tensors of the same values: same_tensor = false skips
  // the checks of identity (storage, strides, version).
  static void check_same(const Snapshot& a, const Snapshot& b, bool same_tensor = true) {
    CHECK(a.defined == b.defined);
    CHECK(a.sizes == b.sizes);
    CHECK(a.dtype == b.dtype);
    CHECK(a.device == b.device);
    CHECK(a.requires_grad == b.requires_grad);
    if (same_tensor) {
      CHECK(a.strides == b.strides);
      CHECK(a.offset == b.offset);
      CHECK(a.version == b.version);
      CHECK(a.data == b.data);
    }
    CHECK(a.values == b.values);
    CHECK(a.has_grad == b.has_grad);
    CHECK(a.grad_values == b.grad_values);
  }

  std::vector<Watched> tensors_;
  std::vector<State> states_;
};

// One bad call: `call` makes fresh inputs (watching them) and performs the call, which must
// throw `expect` with a message starting "[op]" and containing `fragment`.
struct Row {
  std::string_view what;
  Expect expect;
  std::string_view op;
  std::string_view fragment;
  std::function<void(Inputs&)> call;
};

inline bool has_expected_type(const Error& error, Expect expect) {
  switch (expect) {
    case Expect::Error: return true;
    case Expect::Value: return dynamic_cast<const ValueError*>(&error) != nullptr;
    case Expect::Type: return dynamic_cast<const TypeError*>(&error) != nullptr;
    case Expect::Index: return dynamic_cast<const IndexError*>(&error) != nullptr;
    case Expect::NotImplemented: return dynamic_cast<const NotImplementedError*>(&error) != nullptr;
  }
  return false;
}

inline const char* expect_name(Expect expect) {
  switch (expect) {
    case Expect::Error: return "Error";
    case Expect::Value: return "ValueError";
    case Expect::Type: return "TypeError";
    case Expect::Index: return "IndexError";
    case Expect::NotImplemented: return "NotImplementedError";
  }
  return "?";
}

inline const char* type_name(const Error& error) {
  for (Expect kind : {Expect::Value, Expect::Type, Expect::Index, Expect::NotImplemented})
    if (has_expected_type(error, kind)) return expect_name(kind);
  return "Error";
}

// Runs every row of one category; returns how many there were.
inline size_t run_catalogue(std::string_view category, std::span<const Row> rows) {
  for (const Row& row : rows) {
    INFO(category << ": " << row.what << " (expects " << std::string(expect_name(row.expect)) << " [" << row.op
                  << "] ... " << row.fragment << ")");
    Inputs inputs;
    std::string message;
    bool threw = false;
    try {
      row.call(inputs);
    } catch (const Error& error) {
      threw = true;
      message = error.what();
      INFO("message: " << message << " (" << std::string(type_name(error)) << ")");
      CHECK_MESSAGE(has_expected_type(error, row.expect), "wrong Error subclass");
      CHECK_MESSAGE(message.rfind("[internal]", 0) != 0, "an internal assertion is reachable");
      CHECK_MESSAGE(message.rfind(std::string("[") + std::string(row.op) + "]", 0) == 0,
                    "the message does not start with the op name");
      CHECK_MESSAGE(message.find(row.fragment) != std::string::npos, "the message does not say what was wrong");
    } catch (const std::exception& other) {
      threw = true;
      FAIL_CHECK("a non-strata exception escaped: " << other.what());
    } catch (...) {
      threw = true;
      FAIL_CHECK("something that is not a std::exception was thrown");
    }
    CHECK_MESSAGE(threw, "did not throw");
    inputs.check_unchanged();
  }
  MESSAGE(category << ": " << rows.size() << " rows");
  return rows.size();
}

}  // namespace strata::testing
