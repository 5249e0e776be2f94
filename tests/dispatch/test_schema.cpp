// Tests for the operator schema parser and printer (dispatch/schema_parser.cpp).
#include <doctest/doctest.h>

#include <strata/dispatch/dispatcher.h>
#include <strata/dispatch/schema.h>
#include <strata/tensor/errors.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using strata::AliasInfo;
using strata::Argument;
using strata::BaseType;
using strata::DefaultValue;
using strata::FunctionSchema;
using strata::parse_schema;
using strata::SchemaType;
using strata::ValueError;

namespace {

// The message of the ValueError that parsing `text` throws, or a marker when it parses.
std::string error_of(std::string_view text) {
  try {
    (void)parse_schema(text);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "<parsed without error>";
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// Checks that `text` is rejected with a ValueError naming `what` at 1-based `column`,
// and that the third line of the message puts the caret under that column.
void check_rejected(std::string_view text, int column, std::string_view what) {
  INFO("schema: ", text);
  CHECK_THROWS_AS((void)parse_schema(text), ValueError);
  std::string message = error_of(text);
  INFO("message: ", message);
  CHECK(contains(message, "invalid schema: "));
  CHECK(contains(message, what));
  CHECK(contains(message, "at column " + std::to_string(column) + "\n"));
  if (text.size() <= 200) {
    CHECK(contains(message, "\n" + std::string(static_cast<size_t>(column - 1), ' ') + "^"));
  }
}

// The default value of the argument called `name`.
DefaultValue default_of(const FunctionSchema& schema, std::string_view name) {
  for (const Argument& arg : schema.arguments) {
    if (arg.name == name) {
      REQUIRE(arg.default_value.has_value());
      return *arg.default_value;
    }
  }
  FAIL("no argument named ", name);
  return {};
}

DefaultValue default_of(std::string_view argument) {
  return default_of(parse_schema("f(" + std::string(argument) + ") -> ()"), "x");
}

template <class T>
T default_as(std::string_view argument) {
  DefaultValue value = default_of(argument);
  INFO("argument: ", argument, " default: ", value.str());
  REQUIRE(std::holds_alternative<T>(value.value));
  return std::get<T>(value.value);
}

SchemaType type_of(std::string_view type) {
  return parse_schema("f(" + std::string(type) + " x) -> ()").arguments.at(0).type;
}

// parse(str(s)) == s, and str() is a fixed point.
void check_round_trip(std::string_view text) {
  INFO("schema: ", text);
  FunctionSchema schema = parse_schema(text);
  std::string printed = schema.str();
  INFO("printed: ", printed);
  FunctionSchema reparsed = parse_schema(printed);
  CHECK(reparsed == schema);
  CHECK(reparsed.str() == printed);
}

// Deterministic pseudo-random numbers for the mini fuzzer.
struct Lcg {
  uint64_t state;
  uint32_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 33);
  }
  size_t below(size_t n) { return next() % n; }
};

const std::vector<std::string> k_real_schemas = {
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
    "-> Tensor",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
    "int[2] dilation=1, int groups=1) -> Tensor",
    "split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, "
    "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "swish(Tensor x, float beta=1.0) -> Tensor",
    "foo() -> ()",
    "aten::mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
    "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
    "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
    "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "fft_fft2(Tensor self, SymInt[1]? s=None, int[1] dim=[-2,-1], str? norm=None) -> Tensor",
    "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
    "MemoryFormat? memory_format=None) -> Tensor(a)",
    "randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, "
    "Device? device=None, bool? pin_memory=None) -> Tensor",
    "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
    "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) "
    "-> (Tensor, Tensor, Tensor)",
    "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
    "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
    "bool keepdim=False) -> Tensor",
    "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
    "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
    "gelu(Tensor self, *, str approximate='none') -> Tensor",
    "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
    "sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, "
    "Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
};

}  // namespace

TEST_CASE("schema: parses names, namespaces and overloads") {
  FunctionSchema plain = parse_schema("relu(Tensor self) -> Tensor");
  CHECK(plain.name == "relu");
  CHECK(plain.overload_name.empty());
  CHECK(plain.full_name() == "relu");

  FunctionSchema overloaded = parse_schema("add.Tensor(Tensor self, Tensor other) -> Tensor");
  CHECK(overloaded.name == "add");
  CHECK(overloaded.overload_name == "Tensor");
  CHECK(overloaded.full_name() == "add.Tensor");

  FunctionSchema namespaced = parse_schema("aten::_foreach_add_.List(Tensor[] self) -> ()");
  CHECK(namespaced.name == "aten::_foreach_add_");
  CHECK(namespaced.overload_name == "List");
  CHECK(namespaced.full_name() == "aten::_foreach_add_.List");

  FunctionSchema nothing = parse_schema("foo() -> ()");
  CHECK(nothing.arguments.empty());
  CHECK(nothing.returns.empty());
  CHECK(nothing.returns_tuple_syntax);
}

TEST_CASE("schema: parses argument types") {
  CHECK(type_of("Tensor") == SchemaType{});
  CHECK(type_of("SymInt").base == BaseType::Int);
  CHECK(type_of("int").base == BaseType::Int);
  CHECK(type_of("float").base == BaseType::Float);
  CHECK(type_of("bool").base == BaseType::Bool);
  CHECK(type_of("str").base == BaseType::Str);
  CHECK(type_of("Scalar").base == BaseType::Scalar);
  CHECK(type_of("ScalarType").base == BaseType::ScalarType);
  CHECK(type_of("Device").base == BaseType::Device);
  CHECK(type_of("Layout").base == BaseType::Layout);
  CHECK(type_of("MemoryFormat").base == BaseType::MemoryFormat);
  CHECK(type_of("Generator").base == BaseType::Generator);

  SchemaType optional = type_of("Tensor?");
  CHECK(optional.optional);
  CHECK_FALSE(optional.is_list);

  SchemaType list = type_of("int[]");
  CHECK(list.is_list);
  CHECK_FALSE(list.list_size.has_value());
  CHECK_FALSE(list.optional);

  SchemaType fixed = type_of("SymInt[2]");
  CHECK(fixed.base == BaseType::Int);
  CHECK(fixed.is_list);
  CHECK(fixed.list_size == 2);

  SchemaType optional_elements = type_of("Tensor?[]");
  CHECK(optional_elements.is_list);
  CHECK(optional_elements.element_optional);
  CHECK_FALSE(optional_elements.optional);

  SchemaType optional_list = type_of("int[1]?");
  CHECK(optional_list.is_list);
  CHECK(optional_list.list_size == 1);
  CHECK(optional_list.optional);
  CHECK_FALSE(optional_list.element_optional);

  SchemaType both = type_of("Tensor?[]?");
  CHECK(both.element_optional);
  CHECK(both.optional);

  CHECK(type_of("int[]?").str() == "int[]?");
  CHECK(type_of("int[2]?").str() == "int[2]?");
  CHECK(type_of("Tensor?[]").str() == "Tensor?[]");
  CHECK(type_of("SymInt[]").str() == "int[]");
  CHECK(type_of("int[1024]").list_size == 1024);
}

TEST_CASE("schema: parses alias annotations and mutability") {
  FunctionSchema inplace = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  REQUIRE(inplace.arguments[0].alias.has_value());
  CHECK(*inplace.arguments[0].alias == AliasInfo{"a", true});
  CHECK_FALSE(inplace.arguments[1].alias.has_value());
  REQUIRE(inplace.returns.size() == 1);
  CHECK(*inplace.returns[0].alias == AliasInfo{"a", true});
  CHECK_FALSE(inplace.returns_tuple_syntax);
  CHECK(inplace.is_mutable());

  FunctionSchema view = parse_schema("view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
  CHECK(*view.arguments[0].alias == AliasInfo{"a", false});
  CHECK_FALSE(view.is_mutable());

  FunctionSchema optional = parse_schema("f(Tensor(b!)? out=None) -> Tensor(b!)?");
  CHECK(*optional.arguments[0].alias == AliasInfo{"b", true});
  CHECK(optional.arguments[0].type.optional);
  CHECK(optional.returns[0].type.optional);
  CHECK(optional.is_mutable());

  FunctionSchema list = parse_schema("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]");
  CHECK(list.returns[0].type.is_list);
  CHECK(*list.returns[0].alias == AliasInfo{"a", false});
  CHECK(list.returns[0].str() == "Tensor(a)[]");

  // A written return alone does not make the operator mutable.
  CHECK_FALSE(parse_schema("f(Tensor self) -> Tensor(a!)").is_mutable());
}

TEST_CASE("schema: marks arguments after '*' keyword-only") {
  FunctionSchema schema = parse_schema("f(Tensor a, int b=1, *, Scalar c, bool d=False) -> ()");
  REQUIRE(schema.arguments.size() == 4);
  CHECK_FALSE(schema.arguments[0].kwarg_only);
  CHECK_FALSE(schema.arguments[1].kwarg_only);
  CHECK(schema.arguments[2].kwarg_only);
  CHECK(schema.arguments[3].kwarg_only);

  FunctionSchema only_kwargs = parse_schema("f(*, Tensor(a!) out) -> Tensor(a!)");
  REQUIRE(only_kwargs.arguments.size() == 1);
  CHECK(only_kwargs.arguments[0].kwarg_only);
  CHECK(only_kwargs.str() == "f(*, Tensor(a!) out) -> Tensor(a!)");
}

TEST_CASE("schema: parses overloads and defaults") {
  FunctionSchema sum = parse_schema(
      "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor");
  CHECK(sum.full_name() == "sum.dim_IntList");
  CHECK_FALSE(sum.arguments[1].default_value.has_value());
  CHECK(default_of(sum, "keepdim") == DefaultValue{false});
  CHECK(default_of(sum, "dtype") == DefaultValue{DefaultValue::None{}});

  SUBCASE("integers") {
    CHECK(default_as<int64_t>("int x=0") == 0);
    CHECK(default_as<int64_t>("SymInt x=-100") == -100);
    CHECK(default_as<int64_t>("int x=9223372036854775807") ==
          std::numeric_limits<int64_t>::max());
    CHECK(default_as<int64_t>("int x=-9223372036854775808") ==
          std::numeric_limits<int64_t>::min());
    CHECK(default_as<int64_t>("int? x=3") == 3);
  }
  SUBCASE("floats") {
    CHECK(default_as<double>("float x=1.0") == 1.0);
    CHECK(default_as<double>("float x=1.") == 1.0);
    CHECK(default_as<double>("float x=-1e-5") == -1e-5);
    CHECK(default_as<double>("float x=1e-5") == 1e-5);
    CHECK(default_as<double>("float x=2.5E+3") == 2500.0);
    CHECK(default_as<double>("float x=1") == 1.0);  // an integer is fine for a float
    CHECK(default_as<double>("float x=inf") == std::numeric_limits<double>::infinity());
    CHECK(default_as<double>("float x=-inf") == -std::numeric_limits<double>::infinity());
    CHECK(std::isnan(default_as<double>("float x=nan")));
  }
  SUBCASE("bools, strings and identifiers") {
    CHECK(default_as<bool>("bool x=True") == true);
    CHECK(default_as<bool>("bool x=False") == false);
    CHECK(default_as<std::string>("str x='mean'") == "mean");
    CHECK(default_as<std::string>("str x=\"constant\"") == "constant");
    CHECK(default_as<std::string>(R"(str x='it\'s \"q\" \\ a\tb\n')") ==
          "it's \"q\" \\ a\tb\n");
    CHECK(default_as<std::string>("str x=''").empty());
    CHECK(default_as<std::string>("Device x='cpu'") == "cpu");
    CHECK(default_of("int x=Mean") == DefaultValue{DefaultValue::Identifier{"Mean"}});
    CHECK(default_of("MemoryFormat x=contiguous_format") ==
          DefaultValue{DefaultValue::Identifier{"contiguous_format"}});
    CHECK(default_of("ScalarType? x=long") == DefaultValue{DefaultValue::Identifier{"long"}});
    CHECK(default_of("Layout x=strided") == DefaultValue{DefaultValue::Identifier{"strided"}});
    CHECK(default_of("Device x=cpu") == DefaultValue{DefaultValue::Identifier{"cpu"}});
  }
  SUBCASE("Scalar keeps the kind that was written") {
    CHECK(default_as<int64_t>("Scalar x=1") == 1);
    CHECK(default_as<double>("Scalar x=1.5") == 1.5);
    CHECK(default_as<bool>("Scalar x=True") == true);
    CHECK(default_of("Scalar? x=None") == DefaultValue{DefaultValue::None{}});
  }
  SUBCASE("None for optional types") {
    CHECK(default_of("Tensor? x=None") == DefaultValue{DefaultValue::None{}});
    CHECK(default_of("Generator? x=None") == DefaultValue{DefaultValue::None{}});
    CHECK(default_of("int[]? x=None") == DefaultValue{DefaultValue::None{}});
    CHECK(default_of("int[2]? x=None") == DefaultValue{DefaultValue::None{}});
  }
  SUBCASE("lists") {
    CHECK(default_as<std::vector<int64_t>>("int[] x=[]").empty());
    CHECK(default_as<std::vector<int64_t>>("int[2] x=[0, 0]") == std::vector<int64_t>{0, 0});
    CHECK(default_as<std::vector<int64_t>>("int[1] x=[-2,-1]") == std::vector<int64_t>{-2, -1});
    CHECK(default_as<std::vector<double>>("float[] x=[1.0, 2.5]") ==
          std::vector<double>{1.0, 2.5});
    CHECK(default_as<std::vector<double>>("float[] x=[1, 2]") == std::vector<double>{1.0, 2.0});
    CHECK(default_as<std::vector<bool>>("bool[3] x=[True, False, True]") ==
          std::vector<bool>{true, false, true});
    CHECK(default_as<std::vector<int64_t>>("int[]? x=[1]") == std::vector<int64_t>{1});
  }
}

TEST_CASE("schema: expands a scalar default of a fixed-size list") {
  CHECK(default_as<std::vector<int64_t>>("int[2] x=1") == std::vector<int64_t>{1, 1});
  CHECK(default_as<std::vector<int64_t>>("SymInt[3] x=0") == std::vector<int64_t>{0, 0, 0});
  CHECK(default_as<std::vector<int64_t>>("int[] x=1") == std::vector<int64_t>{1});
  CHECK(default_as<std::vector<double>>("float[2] x=0.5") == std::vector<double>{0.5, 0.5});
  CHECK(default_as<std::vector<bool>>("bool[2] x=True") == std::vector<bool>{true, true});
  CHECK(default_as<std::vector<int64_t>>("int[1024] x=7").size() == 1024);

  FunctionSchema conv = parse_schema(
      "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, "
      "int[2] dilation=1, int groups=1) -> Tensor");
  CHECK(default_of(conv, "stride") == DefaultValue{std::vector<int64_t>{1, 1}});
  CHECK(default_of(conv, "padding") == DefaultValue{std::vector<int64_t>{0, 0}});
  CHECK(default_of(conv, "groups") == DefaultValue{int64_t{1}});
  CHECK(conv.str() ==
        "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=[1, 1], "
        "int[2] padding=[0, 0], int[2] dilation=[1, 1], int groups=1) -> Tensor");
}

TEST_CASE("schema: parses returns") {
  FunctionSchema single = parse_schema("f(Tensor a) -> Tensor");
  REQUIRE(single.returns.size() == 1);
  CHECK(single.returns[0].name.empty());
  CHECK_FALSE(single.returns_tuple_syntax);

  FunctionSchema list = parse_schema("f(Tensor a) -> Tensor[]");
  CHECK(list.returns[0].type.is_list);

  FunctionSchema named = parse_schema(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  REQUIRE(named.returns.size() == 2);
  CHECK(named.returns[0].name == "values");
  CHECK(named.returns[1].name == "indices");
  CHECK(named.returns_tuple_syntax);

  FunctionSchema unnamed = parse_schema("f(Tensor a) -> (Tensor, int, float)");
  REQUIRE(unnamed.returns.size() == 3);
  CHECK(unnamed.returns[1].type.base == BaseType::Int);
  CHECK(unnamed.returns[2].name.empty());

  FunctionSchema one_tuple = parse_schema("f(Tensor a) -> (Tensor)");
  CHECK(one_tuple.returns.size() == 1);
  CHECK(one_tuple.returns_tuple_syntax);
  CHECK(one_tuple.str() == "f(Tensor a) -> (Tensor)");

  FunctionSchema none = parse_schema("f(Tensor a) -> ()");
  CHECK(none.returns.empty());
  CHECK(none.str() == "f(Tensor a) -> ()");
}

TEST_CASE("schema: accepts whitespace between tokens") {
  FunctionSchema spaced = parse_schema(
      "  aten :: add_ . Tensor (\n\tTensor ( a ! ) self ,Tensor ? [ ] other,\n  * , int [ 2 ] ? "
      "x = [ 1 , -2 ] , str s = 'a b' ) ->\n ( Tensor ( a ! ) out , Tensor )  \n");
  CHECK(spaced.str() ==
        "aten::add_.Tensor(Tensor(a!) self, Tensor?[] other, *, int[2]? x=[1, -2], str s='a b') "
        "-> (Tensor(a!) out, Tensor)");
  CHECK(parse_schema("f()->()") == parse_schema("f ( ) -> ( )"));
}

TEST_CASE("schema: str() prints canonical text") {
  CHECK(parse_schema("swish(Tensor x, float beta=1.0) -> Tensor").str() ==
        "swish(Tensor x, float beta=1.) -> Tensor");
  CHECK(parse_schema("f(float x=-1e-5, float y=0.1, float z=1e20, float w=-inf) -> ()").str() ==
        "f(float x=-1e-05, float y=0.1, float z=1e+20, float w=-inf) -> ()");
  CHECK(parse_schema("f(str s=\"it's\", Device d=cpu, int r=Mean) -> ()").str() ==
        R"(f(str s='it\'s', Device d=cpu, int r=Mean) -> ())");
  CHECK(parse_schema("f(SymInt[1] d=[-2,-1], bool[2] m=[True,False]) -> ()").str() ==
        "f(int[1] d=[-2, -1], bool[2] m=[True, False]) -> ()");
  CHECK(parse_schema("f(float[] x=[1, 2.5]) -> ()").str() == "f(float[] x=[1., 2.5]) -> ()");

  CHECK(DefaultValue{DefaultValue::None{}}.str() == "None");
  CHECK(DefaultValue{1.0}.str() == "1.");
  CHECK(DefaultValue{0.1}.str() == "0.1");
  CHECK(DefaultValue{std::numeric_limits<double>::quiet_NaN()}.str() == "nan");
  CHECK(DefaultValue{std::string("a\\b")}.str() == R"('a\\b')");
  CHECK(DefaultValue{std::vector<int64_t>{}}.str() == "[]");

  CHECK(strata::base_type_name(BaseType::Int) == "int");
  CHECK(strata::base_type_name(BaseType::MemoryFormat) == "MemoryFormat");

  std::ostringstream out;
  out << parse_schema("cat(Tensor[] tensors, int dim=0) -> Tensor");
  CHECK(out.str() == "cat(Tensor[] tensors, int dim=0) -> Tensor");
}

TEST_CASE("schema: round-trips real PyTorch schemas through str()") {
  for (const std::string& text : k_real_schemas) check_round_trip(text);
  // Already canonical text prints back unchanged.
  for (const char* text : {
           "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
           "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
           "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
           "foo() -> ()",
       }) {
    CHECK(parse_schema(text).str() == text);
  }
  // Every float round-trips exactly, including awkward ones.
  for (double value : {0.1, 1.0 / 3.0, 1e-300, 4.9e-324, 1.7976931348623157e308, -0.0, 123456.0}) {
    FunctionSchema schema;
    schema.name = "f";
    schema.returns_tuple_syntax = true;  // "-> ()"
    Argument arg;
    arg.name = "x";
    arg.type.base = BaseType::Float;
    arg.default_value = DefaultValue{value};
    schema.arguments.push_back(arg);
    INFO("value: ", value, " printed: ", schema.str());
    CHECK(parse_schema(schema.str()) == schema);
  }
}

TEST_CASE("schema: rejects malformed schemas with a column and a caret") {
  check_rejected("", 1, "expected an operator name but found end of schema");
  check_rejected("(Tensor a) -> Tensor", 1, "expected an operator name but found '('");
  check_rejected("foo.(int x) -> ()", 5, "expected an overload name after '.' but found '('");
  check_rejected("foo(Tensr a) -> Tensor", 5, "unknown type 'Tensr'");
  check_rejected("foo(Tensor a, Tensor a) -> Tensor", 22, "duplicate argument name 'a'");
  check_rejected("foo(Tensor a -> Tensor", 14, "expected ',' or ')' but found '->'");
  check_rejected("foo(Tensor a) Tensor", 15, "expected '->' but found 'Tensor'");
  check_rejected("foo(Tensor a) -> Tensor out )", 29, "expected end of schema but found ')'");
  check_rejected("foo(int x, *, int y, *, int z) -> ()", 22, "duplicate '*'");
  check_rejected("foo(Tensor a, *) -> ()", 16,
                 "expected ',' and keyword-only arguments after '*' but found ')'");
  check_rejected("foo(int(a) x) -> ()", 8, "alias annotations are only allowed on Tensor");
  check_rejected("foo(Tensor(a x) -> ()", 14, "expected ')' but found 'x'");
  check_rejected("foo(str s='abc) -> ()", 11, "unterminated string literal");
  check_rejected(R"(foo(str s='a\q') -> ())", 13, "unsupported escape sequence");
  check_rejected("foo(int[][] x) -> ()", 10, "nested list types are not supported");
  check_rejected("foo(int[0] x) -> ()", 9, "list size '0' must be between 1 and 1024");
  check_rejected("foo(int[1025] x) -> ()", 9, "list size '1025' must be between 1 and 1024");
  check_rejected("foo(int[-1] x) -> ()", 9, "expected a list size or ']' but found '-1'");
  check_rejected("foo(int x) -> (Tensor a, Tensor a)", 33, "duplicate return name 'a'");
  check_rejected("foo(int x) -> Tensor y=1", 23, "return values cannot have default values");
  check_rejected("foo(int x) -> *", 15, "'*' is not allowed in returns");
  check_rejected("foo(int x) -> (Tensor", 22, "expected ',' or ')' but found end of schema");
  check_rejected("foo(Tensor, int x) -> ()", 11, "expected an argument name but found ','");
  check_rejected("foo(int x,) -> ()", 11, "expected a type but found ')'");
  check_rejected("foo(int[] x=[[1]]) -> ()", 14, "nested lists are not supported");
  check_rejected("foo(int x=12abc) -> ()", 11, "malformed number '12abc'");
  check_rejected("foo(float x=1e) -> ()", 13, "malformed number '1e'");
  check_rejected("foo(float x=--1) -> ()", 14, "expected a digit after '-' but found '-1'");
  check_rejected("foo(int x=99999999999999999999) -> ()", 11,
                 "number '99999999999999999999' is out of range for a 64-bit integer");
  check_rejected("foo(float x=1e999) -> ()", 13, "out of range for a 64-bit float");
  check_rejected("foo(int x=) -> ()", 11, "expected a default value but found ')'");
  check_rejected("foo(int[] x=[1,]) -> ()", 16, "expected a default value but found ']'");
  check_rejected("foo(int[] x=[1 2]) -> ()", 16, "expected ',' or ']' but found '2'");
  check_rejected(std::string_view("foo(\x01)", 5), 5, "expected a type but found byte 0x01");
  check_rejected("foo(Tensor(a -> ) x) -> ()", 17, "expected an alias set name or '*' after '->' but found ')'");
  check_rejected("foo(Tensor(a -> *|) x) -> ()", 19, "expected an alias set name or '*' after '->' but found ')'");
}

TEST_CASE("schema: ATen's 'Tensor(a -> *)' alias annotation parses and prints back") {
  const std::string text = "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]";
  const FunctionSchema schema = parse_schema(text);
  REQUIRE(schema.arguments[0].alias.has_value());
  CHECK(schema.arguments[0].alias->set == "a");
  CHECK_FALSE(schema.arguments[0].alias->is_write);
  CHECK(schema.arguments[0].alias->after_sets == std::vector<std::string>{"*"});
  CHECK(schema.returns[0].alias->after_sets.empty());
  CHECK(schema.str() == "split.Tensor(Tensor(a -> *) self, int split_size, int dim=0) -> Tensor(a)[]");
  CHECK(parse_schema(schema.str()) == schema);
  const FunctionSchema several = parse_schema("foo(Tensor(a! -> a|b) x, Tensor(b)  y) -> ()");
  CHECK(several.arguments[0].alias->is_write);
  CHECK(several.arguments[0].alias->after_sets == std::vector<std::string>{"a", "b"});
  CHECK(several.str() == "foo(Tensor(a! -> a|b) x, Tensor(b) y) -> ()");
  // The annotation differs from a plain Tensor(a): schemas compare it.
  CHECK(parse_schema("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]") !=
        parse_schema("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"));
  // strata's chunk, split and split_with_sizes are declared with ATen's text.
  CHECK(strata::find_op("strata::chunk").schema() ==
        parse_schema("strata::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]"));
  CHECK(strata::find_op("strata::split_with_sizes").schema() ==
        parse_schema("strata::split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]"));
}

TEST_CASE("schema: error messages name the operator and show a caret") {
  CHECK(error_of("foo(Tensr a) -> Tensor") ==
        "[foo] invalid schema: unknown type 'Tensr' at column 5\n"
        "foo(Tensr a) -> Tensor\n"
        "    ^");
  CHECK(error_of("add.Tensor(Tensor self) Tensor") ==
        "[add.Tensor] invalid schema: expected '->' but found 'Tensor' at column 25\n"
        "add.Tensor(Tensor self) Tensor\n"
        "                        ^");
  CHECK(error_of("aten::foo(int x=1.5) -> ()").rfind("[aten::foo] ", 0) == 0);
  CHECK(error_of("1foo() -> ()").rfind("[schema] ", 0) == 0);
  // Control characters are blanked out so the caret stays aligned.
  CHECK(error_of("f(\tint x, int x) -> ()") ==
        "[f] invalid schema: duplicate argument name 'x' at column 15\n"
        "f( int x, int x) -> ()\n"
        "              ^");
}

TEST_CASE("schema: rejects defaults that do not fit the type") {
  check_rejected("foo(bool keepdim=3) -> ()", 18,
                 "invalid default for 'bool keepdim': expected True or False but found '3'");
  check_rejected("foo(int x=1.5) -> ()", 11,
                 "invalid default for 'int x': expected an integer, Mean or Sum but found '1.5'");
  check_rejected("foo(int x=None) -> ()", 11,
                 "default None requires an optional type, but 'x' has type 'int'");
  check_rejected("foo(Tensor x=None) -> ()", 14,
                 "default None requires an optional type, but 'x' has type 'Tensor'");
  check_rejected("foo(Tensor x=1) -> ()", 14,
                 "invalid default for 'Tensor x': expected None but found '1'");
  check_rejected("foo(Tensor? x=zeros) -> ()", 15, "expected None but found 'zeros'");
  check_rejected("foo(float x=True) -> ()", 13, "expected a number but found 'True'");
  check_rejected("foo(str x=mean) -> ()", 11, "expected a quoted string but found 'mean'");
  check_rejected("foo(ScalarType x=1) -> ()", 18, "expected a dtype name such as float, long or bfloat16 but found '1'");
  check_rejected("foo(Scalar x='a') -> ()", 14, "expected a number, True or False but found ''a''");
  check_rejected("foo(int x=[1, 2]) -> ()", 11,
                 "expected an integer, Mean or Sum but found '[1, 2]'");
  check_rejected("foo(int[] x=[1, 2.5]) -> ()", 17,
                 "invalid default for 'int[] x': expected an integer in the list but found '2.5'");
  check_rejected("foo(bool[] x=[True, 1]) -> ()", 21, "expected True or False in the list");
  check_rejected("foo(int[2] x=same) -> ()", 14, "expected a list or an integer but found 'same'");
  check_rejected("foo(int[] x=['a']) -> ()", 14, "list elements must be numbers, True or False");
  check_rejected("foo(Tensor[] x=[]) -> ()", 16, "'Tensor[] x' can only default to None");
  check_rejected("foo(int?[] x=[None]) -> ()", 15, "list elements must be numbers, True or False");
}

TEST_CASE("schema: an identifier default must mean something for its type") {
  // See Note [Identifier defaults] in boxing.cpp.
  check_rejected("foo(int k=abc) -> ()", 11, "invalid default for 'int k': expected an integer, Mean or Sum but found 'abc'");
  check_rejected("foo(int k=strided) -> ()", 11, "found 'strided'");
  check_rejected("foo(ScalarType? d=floaty) -> ()", 19, "expected a dtype name such as float, long or bfloat16");
  check_rejected("foo(Layout l=channels_last) -> ()", 14, "expected strided but found 'channels_last'");
  check_rejected("foo(MemoryFormat m=strided) -> ()", 20,
                 "expected contiguous_format, preserve_format, channels_last or channels_last_3d");
  check_rejected("foo(Device d=gpu) -> ()", 14, "expected cpu, cuda, meta or a device string");
  check_rejected("foo(Device d='gpu:0') -> ()", 14, "found ''gpu:0''");
  check_rejected("foo(int[2] k=Mean) -> ()", 14, "expected a list or an integer but found 'Mean'");
  for (std::string_view text : {"f(int r=Sum) -> ()", "f(ScalarType d=bfloat16) -> ()", "f(ScalarType? d=half) -> ()",
                                "f(MemoryFormat m=channels_last_3d) -> ()", "f(Layout l=strided) -> ()",
                                "f(Device d=meta) -> ()", "f(Device d='cuda:1') -> ()", "f(float x=-inf) -> ()"}) {
    INFO(text);
    CHECK(parse_schema(parse_schema(text).str()) == parse_schema(text));
  }
}

TEST_CASE("schema: survives hostile input") {
  SUBCASE("too long") {
    std::string text = "f(" + std::string(70000, ' ') + ") -> ()";
    check_rejected(text, 65537, "schema is 70009 bytes long; the limit is 65536");
  }
  SUBCASE("deep nesting is rejected without recursion") {
    check_rejected("f(" + std::string(60000, '(') + ") -> ()", 3, "expected a type but found '('");
    check_rejected("f(int[] x=" + std::string(60000, '[') + ") -> ()", 12,
                   "nested lists are not supported");
    check_rejected("f(int[] x) -> " + std::string(60000, '('), 16, "expected a type but found '('");
  }
  SUBCASE("long error messages show a window around the column") {
    std::string text = "f(" + std::string(1000, ' ') + "Tensr x) -> ()";
    std::string message = error_of(text);
    CHECK(contains(message, "unknown type 'Tensr' at column 1003"));
    CHECK(message.size() < 400);
    CHECK(contains(message, "\n...      "));  // the schema line starts mid-text
  }
  SUBCASE("many arguments") {
    std::string text = "f(";
    for (int i = 0; i < 3000; ++i) text += (i > 0 ? ", int a" : "int a") + std::to_string(i) + "=1";
    text += ") -> ()";
    FunctionSchema schema = parse_schema(text);
    CHECK(schema.arguments.size() == 3000);
    CHECK(parse_schema(schema.str()) == schema);
  }
  SUBCASE("mutated real schemas either parse and round-trip or throw ValueError") {
    const std::string alphabet = "()[]<>,.*?!=-:'\"\\ \t\nafTxN0123456789e";
    Lcg rng{12345};
    int parsed = 0;
    for (int round = 0; round < 4000; ++round) {
      std::string text = k_real_schemas[rng.below(k_real_schemas.size())];
      for (size_t edits = 1 + rng.below(3); edits > 0; --edits) {
        size_t at = rng.below(text.size() + 1);
        switch (rng.below(3)) {
          case 0: text.insert(at, 1, alphabet[rng.below(alphabet.size())]); break;
          case 1: if (at < text.size()) text.erase(at, 1); break;
          default: if (at < text.size()) text[at] = static_cast<char>(rng.below(256)); break;
        }
      }
      INFO("schema: ", text);
      try {
        FunctionSchema schema = parse_schema(text);
        ++parsed;
        CHECK(parse_schema(schema.str()).str() == schema.str());
      } catch (const ValueError& e) {
        CHECK(contains(e.what(), "invalid schema: "));
      }
    }
    CHECK(parsed > 0);
  }
}
