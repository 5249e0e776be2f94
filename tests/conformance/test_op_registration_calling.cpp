// Conformance port of PyTorch's op_registration_test.cpp, part 2 of 3: OperatorRegistrationTest's
// kernel argument and return types (testAvailableArgTypes) and the DispatchKeySet calling
// convention. Upstream order; skipped tests marked `// skipped:`. See README.md in this folder and
// op_registration_helpers.h for how the legacy API maps.
#include <doctest/doctest.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <strata/strata.h>

#include "op_registration_helpers.h"

using namespace strata;
using namespace strata::conformance;

namespace {

// ArgTypeTestKernel / testArgTypes: a catch-all kernel taking `In` and returning `Out`, defined
// with the explicit schema and then with an inferred one, called boxed with `input`; then a
// kernel returning nothing, then one returning (int, Out). `In` is the kernel's parameter type.
template <class In, class Out = In>
void test_arg_types(const IValue& input, std::function<void(const In&)> input_expectation, Out output,
                    std::function<void(const IValue&)> output_expectation, const std::string& schema) {
  const std::string name = qualified(kNs, "my_op");
  auto run = [&](auto register_op, size_t expected_outputs) -> Stack {
    Library m(kNs, Library::DEF);
    register_op(m);
    REQUIRE(has_op(name));  // assert schema is registered
    Stack stack{input};
    find_op(name).call_boxed(stack);
    CHECK(stack.size() == expected_outputs);
    return stack;
  };
  auto kernel = [input_expectation, output](In in) -> Out {
    input_expectation(in);
    return output;
  };

  // Test with explicitly specified schema
  Stack explicit_result = run([&](Library& m) { m.def("my_op" + schema, kernel); }, 1);
  if (explicit_result.size() == 1) output_expectation(explicit_result[0]);

  // Test with inferred schema
  Stack inferred_result = run([&](Library& m) { m.def("my_op", kernel); }, 1);
  if (inferred_result.size() == 1) output_expectation(inferred_result[0]);

  // Test taking argument and returning nothing
  run([&](Library& m) { m.def("my_op", [input_expectation](In in) { input_expectation(in); }); }, 0);

  // Test taking argument and returning multiple outputs
  Stack pair_result = run(
      [&](Library& m) {
        m.def("my_op", [input_expectation, output](In in) {
          input_expectation(in);
          return std::tuple<int64_t, Out>(3, output);
        });
      },
      2);
  if (pair_result.size() == 2) {
    CHECK(pair_result[0].to_int() == 3);
    output_expectation(pair_result[1]);
  }
}

}  // namespace

// differs: kept are every schema type strata has (float, int, bool, str, Tensor, their optionals,
// float[], int[], bool[], Tensor[], int[2], int[]?); left out are str[], Dict(...), int?[],
// the deeply nested type and the legacy std::vector / std::unordered_map spellings (no strata
// schema type or C++ spelling). std::array<T, N> (T[N]) is passed as the list type: strata's
// kernel types ignore list sizes. Upstream tags tensors by dispatch key (CPU in, CUDA out);
// here the input is a CPU tensor and the output a Meta tensor.
TEST_CASE("conformance op_registration_test.cpp: OperatorRegistrationTest.testAvailableArgTypes") {
  const Tensor cpu_tensor = empty({1});
  const Tensor meta_tensor = empty({1}, kMeta);

  // primitive types
  test_arg_types<double>(
      1.5, [](const double& v) { CHECK(1.5 == v); }, 2.5, [](const IValue& v) { CHECK(2.5 == v.to_double()); },
      "(float a) -> float");
  test_arg_types<int64_t>(
      int64_t{1}, [](const int64_t& v) { CHECK(1 == v); }, int64_t{2}, [](const IValue& v) { CHECK(2 == v.to_int()); },
      "(int a) -> int");
  test_arg_types<bool>(
      true, [](const bool& v) { CHECK(true == v); }, false, [](const IValue& v) { CHECK(false == v.to_bool()); },
      "(bool a) -> bool");
  test_arg_types<bool>(
      false, [](const bool& v) { CHECK(false == v); }, true, [](const IValue& v) { CHECK(true == v.to_bool()); },
      "(bool a) -> bool");
  test_arg_types<std::string_view, std::string>(
      std::string("string1"), [](const std::string_view& v) { CHECK("string1" == v); }, std::string("string2"),
      [](const IValue& v) { CHECK("string2" == v.to_string()); }, "(str a) -> str");
  test_arg_types<Tensor>(
      cpu_tensor, [&](const Tensor& v) { CHECK(v.is_same(cpu_tensor)); }, meta_tensor,
      [](const IValue& v) { CHECK(v.to_tensor().is_meta()); }, "(Tensor a) -> Tensor");

  // optional types (with has_value() == true)
  test_arg_types<std::optional<double>>(
      1.5, [](const std::optional<double>& v) { CHECK(1.5 == v.value()); }, std::optional<double>(2.5),
      [](const IValue& v) { CHECK(2.5 == v.to_double()); }, "(float? a) -> float?");
  test_arg_types<std::optional<int64_t>>(
      int64_t{1}, [](const std::optional<int64_t>& v) { CHECK(1 == v.value()); }, std::optional<int64_t>(2),
      [](const IValue& v) { CHECK(2 == v.to_int()); }, "(int? a) -> int?");
  test_arg_types<std::optional<bool>>(
      true, [](const std::optional<bool>& v) { CHECK(true == v.value()); }, std::optional<bool>(false),
      [](const IValue& v) { CHECK(false == v.to_bool()); }, "(bool? a) -> bool?");
  test_arg_types<std::optional<bool>>(
      false, [](const std::optional<bool>& v) { CHECK(false == v.value()); }, std::optional<bool>(true),
      [](const IValue& v) { CHECK(true == v.to_bool()); }, "(bool? a) -> bool?");
  test_arg_types<std::optional<std::string_view>, std::optional<std::string>>(
      std::string("string1"), [](const std::optional<std::string_view>& v) { CHECK("string1" == v.value()); },
      std::optional<std::string>("string2"), [](const IValue& v) { CHECK("string2" == v.to_string()); },
      "(str? a) -> str?");
  test_arg_types<std::optional<Tensor>>(
      cpu_tensor, [&](const std::optional<Tensor>& v) { CHECK(v.value().is_same(cpu_tensor)); },
      std::optional<Tensor>(meta_tensor), [](const IValue& v) { CHECK(v.to_tensor().is_meta()); },
      "(Tensor? a) -> Tensor?");

  // optional types (with has_value() == false)
  test_arg_types<std::optional<double>>(
      std::nullopt, [](const std::optional<double>& v) { CHECK_FALSE(v.has_value()); }, std::optional<double>(),
      [](const IValue& v) { CHECK(v.is_none()); }, "(float? a) -> float?");
  test_arg_types<std::optional<int64_t>>(
      std::nullopt, [](const std::optional<int64_t>& v) { CHECK_FALSE(v.has_value()); }, std::optional<int64_t>(),
      [](const IValue& v) { CHECK(v.is_none()); }, "(int? a) -> int?");
  test_arg_types<std::optional<bool>>(
      std::nullopt, [](const std::optional<bool>& v) { CHECK_FALSE(v.has_value()); }, std::optional<bool>(),
      [](const IValue& v) { CHECK(v.is_none()); }, "(bool? a) -> bool?");
  test_arg_types<std::optional<std::string_view>, std::optional<std::string>>(
      std::nullopt, [](const std::optional<std::string_view>& v) { CHECK_FALSE(v.has_value()); },
      std::optional<std::string>(), [](const IValue& v) { CHECK(v.is_none()); }, "(str? a) -> str?");
  test_arg_types<std::optional<Tensor>>(
      std::nullopt, [](const std::optional<Tensor>& v) { CHECK_FALSE(v.has_value()); }, std::optional<Tensor>(),
      [](const IValue& v) { CHECK(v.is_none()); }, "(Tensor? a) -> Tensor?");

  // list types (with empty list)
  test_arg_types<ArrayRef<double>, std::vector<double>>(
      std::vector<double>(), [](const ArrayRef<double>& v) { CHECK(0 == v.size()); }, std::vector<double>(),
      [](const IValue& v) { CHECK(0 == v.to_double_list().size()); }, "(float[] a) -> float[]");
  test_arg_types<IntArrayRef, std::vector<int64_t>>(
      std::vector<int64_t>(), [](const IntArrayRef& v) { CHECK(0 == v.size()); }, std::vector<int64_t>(),
      [](const IValue& v) { CHECK(0 == v.to_int_list().size()); }, "(int[] a) -> int[]");
  test_arg_types<std::vector<bool>, std::vector<bool>>(
      std::vector<bool>(), [](const std::vector<bool>& v) { CHECK(0 == v.size()); }, std::vector<bool>(),
      [](const IValue& v) { CHECK(0 == v.to_bool_list().size()); }, "(bool[] a) -> bool[]");

  // list types (with non-empty list)
  test_arg_types<ArrayRef<double>, std::vector<double>>(
      std::vector<double>({1.5, 2.5}), [](const ArrayRef<double>& v) { CHECK(v.vec() == std::vector<double>({1.5, 2.5})); },
      std::vector<double>({3.5, 4.5}),
      [](const IValue& v) { CHECK(v.to_double_list() == std::vector<double>({3.5, 4.5})); }, "(float[] a) -> float[]");
  test_arg_types<IntArrayRef, std::vector<int64_t>>(
      std::vector<int64_t>({1, 2}), [](const IntArrayRef& v) { CHECK(v.vec() == std::vector<int64_t>({1, 2})); },
      std::vector<int64_t>({3, 4}), [](const IValue& v) { CHECK(v.to_int_list() == std::vector<int64_t>({3, 4})); },
      "(int[] a) -> int[]");
  test_arg_types<std::vector<bool>, std::vector<bool>>(
      std::vector<bool>({true, false}),
      [](const std::vector<bool>& v) {
        REQUIRE(v.size() == 2);
        CHECK(v[0] == true);
        CHECK(v[1] == false);
      },
      std::vector<bool>({true, false}),
      [](const IValue& v) { CHECK(v.to_bool_list() == std::vector<bool>({true, false})); }, "(bool[] a) -> bool[]");
  test_arg_types<tensor_list>(
      tensor_list({cpu_tensor, meta_tensor}),
      [](const tensor_list& v) {
        REQUIRE(v.size() == 2);
        CHECK(v[0].is_cpu());
        CHECK(v[1].is_meta());
      },
      tensor_list({meta_tensor, cpu_tensor}),
      [](const IValue& v) {
        REQUIRE(v.to_tensor_list().size() == 2);
        CHECK(v.to_tensor_list()[0].is_meta());
        CHECK(v.to_tensor_list()[1].is_cpu());
      },
      "(Tensor[] a) -> Tensor[]");

  // fixed-size list types (std::array upstream)
  test_arg_types<IntArrayRef, std::vector<int64_t>>(
      std::vector<int64_t>({1, 2}), [](const IntArrayRef& v) { CHECK(v.vec() == std::vector<int64_t>({1, 2})); },
      std::vector<int64_t>({3, 4}), [](const IValue& v) { CHECK(v.to_int_list() == std::vector<int64_t>({3, 4})); },
      "(int[2] a) -> int[2]");

  // Test optional of list (with nullopt)
  test_arg_types<std::optional<IntArrayRef>, std::optional<std::vector<int64_t>>>(
      std::nullopt, [](const std::optional<IntArrayRef>& v) { CHECK_FALSE(v.has_value()); },
      std::optional<std::vector<int64_t>>(), [](const IValue& v) { CHECK(v.is_none()); }, "(int[]? a) -> int[]?");

  // Test optional of list (with empty list)
  test_arg_types<std::optional<IntArrayRef>, std::optional<std::vector<int64_t>>>(
      std::vector<int64_t>(), [](const std::optional<IntArrayRef>& v) { CHECK(0 == v.value().size()); },
      std::optional<std::vector<int64_t>>(std::vector<int64_t>()),
      [](const IValue& v) { CHECK(0 == v.to_int_list().size()); }, "(int[]? a) -> int[]?");

  // Test optional of list (with values)
  test_arg_types<std::optional<IntArrayRef>, std::optional<std::vector<int64_t>>>(
      std::vector<int64_t>({1, 2}),
      [](const std::optional<IntArrayRef>& v) { CHECK(v.value().vec() == std::vector<int64_t>({1, 2})); },
      std::optional<std::vector<int64_t>>(std::vector<int64_t>({3, 4})),
      [](const IValue& v) { CHECK(v.to_int_list() == std::vector<int64_t>({3, 4})); }, "(int[]? a) -> int[]?");
}

namespace {

DispatchKeySet autograd_keys() {
  return DispatchKeySet(DispatchKey::AutogradCPU).add(DispatchKey::AutogradCUDA).add(DispatchKey::AutogradMeta);
}

bool called_kernel_cpu = false;
bool called_kernel_autograd = false;
bool called_kernel_tracing = false;

void cpu_kernel(const Tensor&) { called_kernel_cpu = true; }

// autograd kernel that redispatches. Explicitly takes in and updates the DispatchKeySet
// (ks & FULL_AFTER(AutogradOther): the keys below the autograd keys).
void autograd_kernel_redispatching_with_DispatchKeySet(DispatchKeySet ks, const Tensor& a) {
  called_kernel_autograd = true;
  auto op = find_op(qualified(kNs2, "fn")).typed<void(const Tensor&)>();
  op.redispatch(ks - autograd_keys(), a);
}

// As upstream, this one takes the DispatchKeySet too (the name is upstream's).
void autograd_kernel_redispatching_without_DispatchKeySet(DispatchKeySet ks, const Tensor& a) {
  called_kernel_autograd = true;
  auto op = find_op(qualified(kNs2, "fn")).typed<void(const Tensor&)>();
  op.redispatch(ks - autograd_keys(), a);
}

// tracing kernel that redispatches. Explicitly takes in and updates the DispatchKeySet
void tracing_kernel_redispatching_with_DispatchKeySet(DispatchKeySet ks, const Tensor& a) {
  called_kernel_tracing = true;
  auto op = find_op(qualified(kNs2, "fn")).typed<void(const Tensor&)>();
  op.redispatch(ks.remove(DispatchKey::Tracer), a);
}

}  // namespace

// The Tracer + AutogradCPU + CPU tensor of upstream is a CPU tensor requiring grad inside an
// IncludeDispatchKeyGuard(Tracer) (strata's Tracer key comes from the thread-local include set).
TEST_CASE("conformance op_registration_test.cpp: OperatorRegistrationTest.callKernelsWithDispatchKeySetConvention_call_redispatchesToLowerPriorityKernels") {
  Library m(kNs2, Library::DEF);
  m.def("fn(Tensor dummy) -> ()");
  m.impl("fn", cpu_kernel, DispatchKey::CPU);
  m.impl("fn", autograd_kernel_redispatching_with_DispatchKeySet, DispatchKey::AutogradCPU);
  m.impl("fn", tracing_kernel_redispatching_with_DispatchKeySet, DispatchKey::Tracer);

  REQUIRE(has_op(qualified(kNs2, "fn")));

  called_kernel_cpu = called_kernel_autograd = called_kernel_tracing = false;
  Tensor x = dummy_tensor(DispatchKey::CPU, /*requires_grad=*/true);
  IncludeDispatchKeyGuard tracing(DispatchKey::Tracer);

  // call Tracing -> call Autograd -> call CPU
  find_op(qualified(kNs2, "fn")).typed<void(const Tensor&)>().call(x);
  CHECK(called_kernel_tracing);
  CHECK(called_kernel_autograd);
  CHECK(called_kernel_cpu);
}

TEST_CASE("conformance op_registration_test.cpp: OperatorRegistrationTest.callKernelsWithDispatchKeySetConvention_callBoxed_redispatchesToLowerPriorityKernels") {
  Library m(kNs2, Library::DEF);
  m.def("fn(Tensor dummy) -> ()");
  m.impl("fn", cpu_kernel, DispatchKey::CPU);
  m.impl("fn", autograd_kernel_redispatching_with_DispatchKeySet, DispatchKey::AutogradCPU);
  m.impl("fn", tracing_kernel_redispatching_with_DispatchKeySet, DispatchKey::Tracer);

  REQUIRE(has_op(qualified(kNs2, "fn")));

  called_kernel_cpu = called_kernel_autograd = called_kernel_tracing = false;
  Tensor x = dummy_tensor(DispatchKey::CPU, /*requires_grad=*/true);
  IncludeDispatchKeyGuard tracing(DispatchKey::Tracer);

  // call Tracing -> call Autograd -> call CPU
  Stack stack{x};
  find_op(qualified(kNs2, "fn")).call_boxed(stack);
  CHECK(called_kernel_tracing);
  CHECK(called_kernel_autograd);
  CHECK(called_kernel_cpu);
}

TEST_CASE("conformance op_registration_test.cpp: OperatorRegistrationTest.callKernelsWithDispatchKeySetConvention_mixedCallingConventions_redispatchesToLowerPriorityKernels") {
  Library m(kNs2, Library::DEF);
  m.def("fn(Tensor dummy) -> ()");
  m.impl("fn", cpu_kernel, DispatchKey::CPU);
  // the tracing kernel takes in a DispatchKeySet, but the autograd kernel does not
  // the dispatcher should handle correctly plumbing its DispatchKeySet to tracing and not autograd.
  m.impl("fn", autograd_kernel_redispatching_without_DispatchKeySet, DispatchKey::AutogradCPU);
  m.impl("fn", tracing_kernel_redispatching_with_DispatchKeySet, DispatchKey::Tracer);

  REQUIRE(has_op(qualified(kNs2, "fn")));

  called_kernel_cpu = called_kernel_autograd = called_kernel_tracing = false;
  Tensor x = dummy_tensor(DispatchKey::CPU, /*requires_grad=*/true);
  IncludeDispatchKeyGuard tracing(DispatchKey::Tracer);

  // call Tracing -> call Autograd -> call CPU
  find_op(qualified(kNs2, "fn")).typed<void(const Tensor&)>().call(x);
  CHECK(called_kernel_tracing);
  CHECK(called_kernel_autograd);
  CHECK(called_kernel_cpu);
}

// skipped: OperatorRegistrationTest.getRegistrationsForDispatchKey (Dispatcher::
// getRegistrationsForDispatchKey: strata has no API listing the registered ops)
// skipped: OperatorRegistrationTest.TestSymNonSymCompatibility (SymInt: strata has no symbolic ints)
// skipped: OperatorRegistrationTest.TestSymSymCompatibility (same)
// skipped: OperatorRegistrationTest.TestSymSymRefCompatibility (same)
