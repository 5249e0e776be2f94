// Signature checks (impl and typed<Sig>) and boxed-call argument handling.
#include <cmath>

#include <strata/dispatch/boxing.h>
#include <strata/dispatch/operator_entry.h>

namespace strata::detail {

namespace {

// The C++ type a kernel takes (or returns) for a schema type. See Note [Canonical C++ types].
std::string canonical_cpp_name(const SchemaType& type, bool is_return) {
  auto none = [&] { return "(no C++ type in strata for " + type.str() + ")"; };
  std::string base;
  switch (type.base) {
    case BaseType::Tensor: base = !type.is_list ? "Tensor" : type.element_optional ? "optional_tensor_list" : "tensor_list"; break;
    case BaseType::Int: base = !type.is_list ? "int64_t" : is_return ? "std::vector<int64_t>" : "IntArrayRef"; break;
    case BaseType::Float: base = !type.is_list ? "double" : is_return ? "std::vector<double>" : "ArrayRef<double>"; break;
    case BaseType::Bool: base = type.is_list ? "std::vector<bool>" : "bool"; break;
    case BaseType::Str: base = is_return ? "std::string" : "std::string_view"; break;
    case BaseType::Scalar: base = "Scalar"; break;
    case BaseType::ScalarType: base = "ScalarType"; break;
    case BaseType::Device: base = "Device"; break;
    default: return none();
  }
  bool list_ok = type.base == BaseType::Tensor || type.base == BaseType::Int || type.base == BaseType::Float ||
                 type.base == BaseType::Bool;
  if (type.is_list && !list_ok) return none();
  if (type.element_optional && type.base != BaseType::Tensor) return none();
  return type.optional ? "std::optional<" + base + ">" : base;
}

std::string canonical_return_name(const std::vector<Argument>& returns) {
  if (returns.empty()) return "void";
  if (returns.size() == 1) return canonical_cpp_name(returns[0].type, true);
  std::string result = "std::tuple<";
  for (size_t i = 0; i < returns.size(); ++i) result += (i ? ", " : "") + canonical_cpp_name(returns[i].type, true);
  return result + ">";
}

// Kernel types ignore list sizes.
bool same_type(const SchemaType& schema_type, const SchemaType& kernel_type) {
  return schema_type.base == kernel_type.base && schema_type.is_list == kernel_type.is_list &&
         schema_type.optional == kernel_type.optional && schema_type.element_optional == kernel_type.element_optional;
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
                   canonical_cpp_name(arguments[i].type, false), ") but the C++ function takes ",
                   signature.argument_cpp_names[i]));
  }
  if (!signature.returns) fail(str_cat("return type ", signature.return_cpp_name, " is not a schema return type"));
  const auto& returns = *signature.returns;
  const std::string expected = canonical_return_name(schema.returns);
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

namespace {

// Note [Identifier defaults]
// An identifier default stands for a value of its argument's type, as in PyTorch's schemas:
// int: Mean, Sum (at::Reduction, 1 and 2); MemoryFormat: contiguous_format, preserve_format,
// channels_last, channels_last_3d (0..3); Layout: strided (0); ScalarType: a dtype name
// (float, long, bfloat16...); Device: cpu, cuda, meta. MemoryFormat and Layout box as ints, as
// in PyTorch. The parser accepts exactly the names default_identifiers() lists (anything else
// is a schema error), and every one of them boxes here.
constexpr std::pair<std::string_view, ScalarType> k_dtype_names[] = {
    {"bool", kBool},         {"uint8", kUInt8},     {"int32", kInt32},     {"int", kInt32},
    {"int64", kInt64},       {"long", kInt64},      {"float16", kFloat16}, {"half", kFloat16},
    {"bfloat16", kBFloat16}, {"float32", kFloat32}, {"float", kFloat32},   {"float64", kFloat64},
    {"double", kFloat64},    {"int8", kInt8},       {"char", kInt8},       {"int16", kInt16},
    {"short", kInt16}};
constexpr std::pair<std::string_view, int64_t> k_int_identifiers[] = {
    {"Mean", 1}, {"Sum", 2}, {"contiguous_format", 0}, {"preserve_format", 1}, {"channels_last", 2},
    {"channels_last_3d", 3}, {"strided", 0}};

std::optional<IValue> identifier_value(BaseType base, std::string_view text) {
  if (base == BaseType::ScalarType) {
    for (auto [name, dtype] : k_dtype_names)
      if (name == text) return IValue(dtype);
  } else if (base == BaseType::Device) {
    return IValue(Device(text));
  } else if (base == BaseType::Int || base == BaseType::MemoryFormat || base == BaseType::Layout) {
    for (auto [name, value] : k_int_identifiers)
      if (name == text) return IValue(value);
  }
  return std::nullopt;
}

}  // namespace

IValue default_to_ivalue(const Argument& argument, const std::string& op_name) {
  const auto& value = argument.default_value->value;
  const BaseType base = argument.type.base;
  return std::visit(
      [&](const auto& v) -> IValue {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, DefaultValue::None>) {
          return IValue();
        } else if constexpr (std::is_same_v<V, DefaultValue::Identifier>) {  // See Note [Identifier defaults]
          if (auto boxed = identifier_value(base, v.text)) return *boxed;
          throw_error<ValueError>("[", op_name, "] default value '", v.text, "' of argument '", argument.name,
                                  "' means nothing for ", argument.type.str());
        } else if constexpr (std::is_same_v<V, std::string>) {
          if (base == BaseType::Device) return IValue(Device(std::string_view(v)));
          return IValue(v);
        } else if constexpr (std::is_same_v<V, double>) {
          if (base == BaseType::Scalar) return IValue(Scalar(v));
          return IValue(v);
        } else if constexpr (std::is_same_v<V, int64_t>) {
          if (base == BaseType::Float) return IValue(static_cast<double>(v));
          if (base == BaseType::Scalar) return IValue(Scalar(v));
          return IValue(v);
        } else {
          return IValue(v);  // bool, and int, float and bool lists
        }
      },
      value);
}

namespace {

// How well a value fits a schema type: nullopt when it does not, 0 when its kind is the
// type's own, higher for conversions (int -> float, number -> Scalar, a single int -> int[N]).
std::optional<int> list_match_cost(const IValue& value, const SchemaType& type) {
  const bool sized = type.list_size.has_value();
  switch (type.base) {
    case BaseType::Tensor:
      if (type.element_optional) {
        if (value.is_optional_tensor_list()) return 0;
        if (value.is_tensor_list()) return 1;
        return std::nullopt;
      }
      if (value.is_tensor_list()) return 0;
      return std::nullopt;
    case BaseType::Int:
      if (value.is_int_list()) return 0;
      if (value.is_int()) return 2;
      return std::nullopt;
    case BaseType::Float:
      if (value.is_double_list()) return 0;
      if (value.is_int_list()) return 1;
      if (sized && (value.is_double() || value.is_int())) return 2;
      return std::nullopt;
    case BaseType::Bool:
      if (value.is_bool_list()) return 0;
      if (sized && value.is_bool()) return 2;
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<int> match_cost(const IValue& value, const SchemaType& type) {
  if (value.is_none()) return type.optional ? std::optional<int>(0) : std::nullopt;
  if (type.is_list) return list_match_cost(value, type);
  auto exact = [](bool ok) { return ok ? std::optional<int>(0) : std::nullopt; };
  switch (type.base) {
    case BaseType::Tensor: return exact(value.is_tensor());
    case BaseType::Int:
    case BaseType::Layout:
    case BaseType::MemoryFormat: return exact(value.is_int());
    case BaseType::Float:
      if (value.is_int()) return 1;
      return exact(value.is_double());
    case BaseType::Bool: return exact(value.is_bool());
    case BaseType::Str: return exact(value.is_string());
    case BaseType::Scalar:
      if (value.is_scalar()) return 0;
      if (value.is_number()) return 1;
      return std::nullopt;
    case BaseType::ScalarType: return exact(value.is_scalar_type());
    case BaseType::Device: return exact(value.is_device());
    default: return std::nullopt;
  }
}

template <class T>
std::vector<T> repeated(const SchemaType& type, T value) {
  return std::vector<T>(static_cast<size_t>(type.list_size.value_or(1)), value);
}

// Brings an accepted value to the kind the kernel thunk reads.
void canonicalize(IValue& value, const SchemaType& type) {
  if (value.is_none()) return;
  if (!type.is_list) {
    if (type.base == BaseType::Float && value.is_int()) value = IValue(value.to_double());
    else if (type.base == BaseType::Scalar && !value.is_scalar()) value = IValue(value.to_scalar());
    return;
  }
  if (type.base == BaseType::Int && value.is_int()) {
    value = IValue(repeated(type, value.to_int()));
  } else if (type.base == BaseType::Int && type.list_size && value.to_int_list().size() == 1 && *type.list_size > 1) {
    value = IValue(repeated(type, value.to_int_list()[0]));
  } else if (type.base == BaseType::Float && value.is_int_list()) {
    const auto& ints = value.to_int_list();
    value = IValue(std::vector<double>(ints.begin(), ints.end()));
  } else if (type.base == BaseType::Float && !value.is_double_list()) {
    value = IValue(repeated(type, value.to_double()));
  } else if (type.base == BaseType::Bool && value.is_bool()) {
    value = IValue(repeated(type, value.to_bool()));
  } else if (type.base == BaseType::Tensor && type.element_optional && value.is_tensor_list()) {
    const auto& tensors = value.to_tensor_list();
    value = IValue(optional_tensor_list(tensors.begin(), tensors.end()));
  }
}

}  // namespace

std::optional<int> boxed_match_cost(const FunctionSchema& schema, const Stack& stack) {
  const auto& arguments = schema.arguments;
  if (stack.size() > arguments.size()) return std::nullopt;
  int cost = 0;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i >= stack.size()) {
      if (!arguments[i].default_value) return std::nullopt;
      continue;
    }
    std::optional<int> one = match_cost(stack[i], arguments[i].type);
    if (!one) return std::nullopt;
    cost += *one;
  }
  return cost;
}

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
    STRATA_CHECK_TYPE(match_cost(value, arguments[i].type).has_value(), "[", op_name, "] argument '", arguments[i].name, "' (position ",
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

namespace strata::detail {

// Note [Schema inference]
// def("name", fn) writes the schema torch::Library::def(name, fn) would: one argument per C++
// parameter, named _0, _1, ..., typed by Note [Canonical C++ types] (std::string -> str,
// std::vector<int64_t> -> int[]...), and the returns of the C++ return type: void -> "()", a
// tuple -> "(A, B, ...)". No defaults and no alias annotations: a kernel that needs them is
// def'd with an explicit schema.
std::string infer_schema(const std::string& qualified_name, const std::optional<KernelSignature>& signature) {
  STRATA_CHECK_TYPE(signature.has_value(), "[", qualified_name,
                    "] def: cannot infer a schema from a boxed kernel; write the schema out");
  std::string text = qualified_name + "(";
  for (size_t i = 0; i < signature->arguments.size(); ++i) {
    const auto& type = signature->arguments[i];
    STRATA_CHECK_TYPE(type.has_value(), "[", qualified_name, "] def: cannot infer a schema: argument ", i + 1,
                      " has C++ type ", signature->argument_cpp_names[i],
                      ", which has no schema type (see Note [Canonical C++ types])");
    text += str_cat(i ? ", " : "", type->str(), " _", i);
  }
  STRATA_CHECK_TYPE(signature->returns.has_value(), "[", qualified_name, "] def: cannot infer a schema: return type ",
                    signature->return_cpp_name, " has no schema type (see Note [Canonical C++ types])");
  const auto& returns = *signature->returns;
  text += ") -> ";
  if (returns.size() == 1) return text + returns[0].str();
  text += "(";
  for (size_t i = 0; i < returns.size(); ++i) text += (i ? ", " : "") + returns[i].str();
  return text + ")";
}

}  // namespace strata::detail
