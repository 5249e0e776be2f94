// Signature checks (impl and typed<Sig>) and boxed-call argument handling.
#include <cmath>

#include <strata/dispatch/operator_entry.h>

namespace strata::detail {

namespace {

// The C++ type a kernel takes for a schema type. See Note [Canonical C++ types].
std::string canonical_cpp_name(const SchemaType& type) {
  std::string base;
  switch (type.base) {
    case BaseType::Tensor: base = type.is_list ? "tensor_list" : "Tensor"; break;
    case BaseType::Int: base = type.is_list ? "IntArrayRef" : "int64_t"; break;
    case BaseType::Float: base = "double"; break;
    case BaseType::Bool: base = "bool"; break;
    case BaseType::Str: base = "std::string_view"; break;
    case BaseType::Scalar: base = "Scalar"; break;
    case BaseType::ScalarType: base = "ScalarType"; break;
    case BaseType::Device: base = "Device"; break;
    default: return "(no C++ type in strata for " + std::string(base_type_name(type.base)) + ")";
  }
  if (type.is_list && type.base != BaseType::Tensor && type.base != BaseType::Int)
    return "(no C++ type in strata for " + type.str() + ")";
  return type.optional ? "std::optional<" + base + ">" : base;
}

// Kernel types ignore list sizes and element optionality (Tensor?[] is a tensor_list with
// undefined entries).
bool same_type(const SchemaType& schema_type, const SchemaType& kernel_type) {
  return schema_type.base == kernel_type.base && schema_type.is_list == kernel_type.is_list &&
         schema_type.optional == kernel_type.optional;
}

}  // namespace

void check_signature(const FunctionSchema& schema, const KernelSignature& signature, const std::string& op_name,
                     const std::string& context) {
  auto fail = [&](const std::string& what) {
    std::string cpp = signature.return_cpp_name + "(";
    for (size_t i = 0; i < signature.argument_cpp_names.size(); ++i)
      cpp += (i ? ", " : "") + signature.argument_cpp_names[i];
    cpp += ")";
    throw_error<TypeError>("[", op_name, "] ", context, ": C++ signature ", cpp, " does not match the schema ", schema,
                           ": ", what);
  };
  const auto& arguments = schema.arguments;
  if (arguments.size() != signature.arguments.size())
    fail(str_cat("the schema has ", arguments.size(), " arguments, the C++ function takes ", signature.arguments.size()));
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto& kernel_type = signature.arguments[i];
    if (!kernel_type || !same_type(arguments[i].type, *kernel_type))
      fail(str_cat("argument ", i + 1, " '", arguments[i].name, "' is ", arguments[i].type.str(), " (C++ ",
                   canonical_cpp_name(arguments[i].type), ") but the C++ function takes ",
                   signature.argument_cpp_names[i]));
  }
  if (!signature.returns) fail(str_cat("return type ", signature.return_cpp_name, " is not a schema return type"));
  const auto& returns = *signature.returns;
  std::string expected = schema.returns.empty() ? "void" : schema.returns.size() == 1 ? canonical_cpp_name(schema.returns[0].type)
                                                                                      : "std::tuple of Tensors";
  if (returns.size() != schema.returns.size())
    fail(str_cat("the schema returns ", schema.returns.size(), " values (C++ ", expected, "), the C++ function returns ",
                 signature.return_cpp_name));
  for (size_t i = 0; i < returns.size(); ++i)
    if (!same_type(schema.returns[i].type, returns[i]))
      fail(str_cat("return ", i + 1, " is ", schema.returns[i].type.str(), " (C++ ", expected,
                   ") but the C++ function returns ", signature.return_cpp_name));
}

void check_boxed_arity(const OperatorHandle& op, const Stack& stack, size_t count) {
  STRATA_CHECK_TYPE(stack.size() >= count, "[", op.name(), "] boxed kernel needs ", count,
                    " arguments on the stack, found ", stack.size());
}

IValue default_to_ivalue(const Argument& argument, const std::string& op_name) {
  const auto& value = argument.default_value->value;
  return std::visit(
      [&](const auto& v) -> IValue {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, DefaultValue::None>) {
          return IValue();
        } else if constexpr (std::is_same_v<V, DefaultValue::Identifier>) {
          // Reduction enums are ints in schemas (PyTorch's at::Reduction).
          if (argument.type.base == BaseType::Int && (v.text == "Mean" || v.text == "Sum" || v.text == "None"))
            return IValue(int64_t{v.text == "None" ? 0 : v.text == "Mean" ? 1 : 2});
          if (argument.type.base == BaseType::Str) return IValue(v.text);
          throw_error<NotImplementedError>("[", op_name, "] default value '", v.text, "' of argument '", argument.name,
                                           "' has no boxed form");
        } else if constexpr (std::is_same_v<V, double>) {
          if (argument.type.base == BaseType::Scalar) return IValue(Scalar(v));
          return IValue(v);
        } else if constexpr (std::is_same_v<V, int64_t>) {
          if (argument.type.base == BaseType::Float) return IValue(static_cast<double>(v));
          if (argument.type.base == BaseType::Scalar) return IValue(Scalar(v));
          if (argument.type.is_list) return IValue(std::vector<int64_t>(argument.type.list_size.value_or(1), v));
          return IValue(v);
        } else if constexpr (std::is_same_v<V, std::vector<double>> || std::is_same_v<V, std::vector<bool>>) {
          throw_error<NotImplementedError>("[", op_name, "] list default of argument '", argument.name,
                                           "' has no boxed form");
        } else {
          return IValue(v);
        }
      },
      value);
}

namespace {

bool matches(const IValue& value, const SchemaType& type) {
  if (value.is_none()) return type.optional;
  if (type.is_list) {
    if (type.base == BaseType::Tensor) return value.is_tensor_list();
    if (type.base == BaseType::Int) return value.is_int_list() || value.is_int();
    return false;
  }
  switch (type.base) {
    case BaseType::Tensor: return value.is_tensor();
    case BaseType::Int: return value.is_int();
    case BaseType::Float: return value.is_double() || value.is_int();
    case BaseType::Bool: return value.is_bool();
    case BaseType::Str: return value.is_string();
    case BaseType::Scalar: return value.is_number();
    case BaseType::ScalarType: return value.is_scalar_type();
    case BaseType::Device: return value.is_device();
    default: return false;
  }
}

// Brings an accepted value to the kind the kernel thunk reads.
void canonicalize(IValue& value, const SchemaType& type) {
  if (value.is_none()) return;
  if (type.is_list && type.base == BaseType::Int && value.is_int())
    value = IValue(std::vector<int64_t>(type.list_size.value_or(1), value.to_int()));
  else if (!type.is_list && type.base == BaseType::Float && value.is_int())
    value = IValue(value.to_double());
  else if (!type.is_list && type.base == BaseType::Scalar && !value.is_scalar())
    value = IValue(value.to_scalar());
  if (type.is_list && type.list_size && value.is_int_list() && value.to_int_list().size() == 1 && *type.list_size > 1)
    value = IValue(std::vector<int64_t>(*type.list_size, value.to_int_list()[0]));
}

}  // namespace

void normalize_boxed_arguments(const FunctionSchema& schema, const std::string& op_name, Stack& stack) {
  const auto& arguments = schema.arguments;
  // Arguments are the whole stack: a boxed call owns its stack.
  STRATA_CHECK_TYPE(stack.size() <= arguments.size(), "[", op_name, "] expected at most ", arguments.size(),
                    " arguments but got ", stack.size());
  for (size_t i = stack.size(); i < arguments.size(); ++i) {
    STRATA_CHECK_TYPE(arguments[i].default_value.has_value(), "[", op_name, "] missing argument '", arguments[i].name,
                      "' (position ", i + 1, ", ", arguments[i].type.str(), ")");
    stack.push_back(default_to_ivalue(arguments[i], op_name));
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    IValue& value = stack[i];
    STRATA_CHECK_TYPE(matches(value, arguments[i].type), "[", op_name, "] argument '", arguments[i].name, "' (position ",
                      i + 1, ") must be ", arguments[i].type.str(), ", got ", value.kind_name());
    canonicalize(value, arguments[i].type);
  }
}

namespace {
void call_boxed_functor(void* functor, const OperatorHandle& op, DispatchKeySet, Stack& stack) {
  (*static_cast<BoxedKernel*>(functor))(op, stack);
}
void call_boxed_functor_with_keys(void* functor, const OperatorHandle& op, DispatchKeySet keys, Stack& stack) {
  (*static_cast<BoxedKernelWithKeys*>(functor))(op, keys, stack);
}
}  // namespace

KernelBundle make_boxed_kernel_bundle(BoxedKernel kernel) {
  STRATA_CHECK_VALUE(static_cast<bool>(kernel), "[impl] boxed kernel is empty");
  auto state = std::make_shared<BoxedKernel>(std::move(kernel));
  KernelBundle bundle;
  bundle.function.functor = state.get();
  bundle.function.boxed = &call_boxed_functor;
  bundle.owner = std::move(state);
  return bundle;
}

KernelBundle make_boxed_kernel_bundle(BoxedKernelWithKeys kernel) {
  STRATA_CHECK_VALUE(static_cast<bool>(kernel), "[impl] boxed kernel is empty");
  auto state = std::make_shared<BoxedKernelWithKeys>(std::move(kernel));
  KernelBundle bundle;
  bundle.function.functor = state.get();
  bundle.function.boxed = &call_boxed_functor_with_keys;
  bundle.owner = std::move(state);
  return bundle;
}

KernelBundle make_fallthrough_bundle() {
  KernelBundle bundle;
  bundle.function.fallthrough = true;
  return bundle;
}

}  // namespace strata::detail
