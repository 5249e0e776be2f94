// Tests for tensor/dim_vector.h: inline storage, growth to the heap, copies and moves.
#include <doctest/doctest.h>

#include <strata/tensor/array_ref.h>
#include <strata/tensor/dim_vector.h>

#include <sstream>
#include <utility>
#include <vector>

using namespace strata;

TEST_CASE("dim_vector: construction and element access") {
  DimVector empty;
  CHECK(empty.empty());
  CHECK(empty.size() == 0);
  DimVector filled(3, 7);
  CHECK(filled.vec() == std::vector<int64_t>{7, 7, 7});
  DimVector listed{2, 3, 4};
  CHECK(listed.size() == 3);
  CHECK(listed[1] == 3);
  CHECK(listed.back() == 4);
  listed[1] = 9;
  CHECK(listed.vec() == std::vector<int64_t>{2, 9, 4});
  std::vector<int64_t> source{5, 6};
  DimVector from_ref(IntArrayRef{source});
  CHECK(from_ref.ref() == IntArrayRef{5, 6});
}

TEST_CASE("dim_vector: grows past the inline capacity and keeps its values") {
  DimVector values;
  for (int64_t i = 0; i < 40; ++i) values.push_back(i * i);
  REQUIRE(values.size() == 40);
  for (int64_t i = 0; i < 40; ++i) CHECK(values[static_cast<size_t>(i)] == i * i);
  DimVector big(std::vector<int64_t>(12, 1));
  CHECK(big.size() == 12);
}

TEST_CASE("dim_vector: copies and moves, inline and on the heap") {
  for (size_t count : {size_t{3}, size_t{9}}) {
    DimVector original(count, 0);
    for (size_t i = 0; i < count; ++i) original[i] = static_cast<int64_t>(i + 1);
    DimVector copy = original;
    CHECK(copy == original);
    copy[0] = 100;
    CHECK(original[0] == 1);  // deep copy
    DimVector moved = std::move(copy);
    CHECK(moved[0] == 100);
    CHECK(moved.size() == count);
    CHECK(copy.size() == 0);  // NOLINT: a moved-from DimVector is empty
    DimVector assigned{1};
    assigned = original;
    CHECK(assigned == original);
    assigned = std::move(moved);
    CHECK(assigned[0] == 100);
    DimVector& self = assigned;
    assigned = self;  // self-assignment keeps the values
    CHECK(assigned[0] == 100);
  }
}

TEST_CASE("dim_vector: insert, erase, resize, assign, clear") {
  DimVector values{1, 2, 3};
  values.insert(0, 0);
  values.insert(4, 4);
  values.insert(2, 9);
  CHECK(values.vec() == std::vector<int64_t>{0, 1, 9, 2, 3, 4});  // crossed the inline capacity
  values.erase(2);
  CHECK(values.vec() == std::vector<int64_t>{0, 1, 2, 3, 4});
  values.erase(4);
  CHECK(values.vec() == std::vector<int64_t>{0, 1, 2, 3});
  values.resize(6, -1);
  CHECK(values.vec() == std::vector<int64_t>{0, 1, 2, 3, -1, -1});
  values.resize(2);
  CHECK(values.vec() == std::vector<int64_t>{0, 1});
  values.assign(4, 5);
  CHECK(values.vec() == std::vector<int64_t>{5, 5, 5, 5});
  values.assign(IntArrayRef{8, 9});
  CHECK(values.vec() == std::vector<int64_t>{8, 9});
  values.assign(values.ref());  // assigning its own view is safe
  CHECK(values.vec() == std::vector<int64_t>{8, 9});
  values.clear();
  CHECK(values.empty());
}

TEST_CASE("dim_vector: ArrayRef conversion and printing") {
  DimVector values{2, 3};
  IntArrayRef ref = values;
  CHECK(ref.size() == 2);
  CHECK(ref.data() == values.data());
  std::ostringstream out;
  out << ref;
  CHECK(out.str() == "[2, 3]");
  CHECK(DimVector{1, 2} != DimVector{1, 3});
  CHECK_THROWS_AS(ref.at(2), IndexError);
}
