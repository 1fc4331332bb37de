// PatchList: where symbolic operands live and how apply() rewrites only what changed.
#include "hcq/backend/patch.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "hcq/error.hpp"

namespace hcq {
namespace {

class PatchListTest : public ::testing::Test {
 protected:
  std::array<uint32_t, 16> words{};
  PatchList patches;
  uint32_t region = patches.add_region(reinterpret_cast<std::byte*>(words.data()));

  PatchList::Location at(size_t word, PatchList::Kind kind = PatchList::Kind::u32) { return {region, word * 4, kind}; }
};

TEST_F(PatchListTest, RegionsStartAtOne) { EXPECT_GE(region, 1u); }

TEST_F(PatchListTest, ConstantIsWrittenAtOnceAndNotRecorded) {
  patches.add(Sym(0x1234), at(3));
  EXPECT_EQ(words[3], 0x1234u);
  EXPECT_EQ(patches.size(), 0u);
  EXPECT_TRUE(patches.empty());
}

TEST_F(PatchListTest, U32WritesLowBitsOfValuePlusOffset) {
  patches.add(Var{0} + 5, at(1));
  std::vector<uint64_t> vars{0x1'0000'0010};
  patches.apply(vars);
  EXPECT_EQ(words[1], 0x15u);  // (0x1'0000'0010 + 5) truncated to 32 bits
}

TEST_F(PatchListTest, U32Shift) {
  patches.add(Sym(Var{0}), {region, 0, PatchList::Kind::u32, 32});
  patches.add(Sym(Var{0}), {region, 4, PatchList::Kind::u32, 8});
  std::vector<uint64_t> vars{0xaabbccdd'11223344};
  patches.apply(vars);
  EXPECT_EQ(words[0], 0xaabbccddu);
  EXPECT_EQ(words[1], 0xdd112233u);
}

TEST_F(PatchListTest, U64IsLittleEndianAndNeedsOnly4ByteAlignment) {
  patches.add(Sym(Var{0}), at(1, PatchList::Kind::u64));  // byte offset 4: not 8-aligned
  std::vector<uint64_t> vars{0x0123456789abcdefULL};
  patches.apply(vars);
  EXPECT_EQ(words[1], 0x89abcdefu);
  EXPECT_EQ(words[2], 0x01234567u);
}

TEST_F(PatchListTest, NegativeOffsetWrapsAround) {
  patches.add(Var{0} - 1, at(0, PatchList::Kind::u64));
  std::vector<uint64_t> vars{0};
  patches.apply(vars);
  uint64_t v;
  std::memcpy(&v, &words[0], 8);
  EXPECT_EQ(v, ~uint64_t{0});
}

TEST_F(PatchListTest, FieldKeepsOtherBits) {
  words[2] = 0xffffffffu;
  patches.add(Sym(Var{0}), {region, 8, PatchList::Kind::field, 0, 8, 4});
  std::vector<uint64_t> vars{0x5};
  patches.apply(vars);
  EXPECT_EQ(words[2], 0xfffff5ffu);
  vars[0] = 0x1a;  // wider than the field: only the low 4 bits land
  patches.apply(vars);
  EXPECT_EQ(words[2], 0xfffffaffu);
}

TEST_F(PatchListTest, FieldWithShift) {
  patches.add(Sym(Var{0}), {region, 0, PatchList::Kind::field, 4, 16, 16});
  std::vector<uint64_t> vars{0xabcd0};
  patches.apply(vars);
  EXPECT_EQ(words[0], 0xabcd0000u);
}

TEST_F(PatchListTest, RejectsFieldThatDoesNotFit) {
  EXPECT_THROW(patches.add(Sym(Var{0}), {region, 0, PatchList::Kind::field, 0, 20, 16}), InvalidArgument);
  EXPECT_THROW(patches.add(Sym(Var{0}), {region, 0, PatchList::Kind::field, 0, 0, 0}), InvalidArgument);
  EXPECT_THROW(patches.add(Sym(Var{0}), {99, 0, PatchList::Kind::u32}), InvalidArgument);
  EXPECT_EQ(patches.size(), 0u);
}

TEST_F(PatchListTest, OnlyChangedVariablesAreRewritten) {
  patches.add(Sym(Var{0}), at(0));
  patches.add(Sym(Var{1}), at(1));
  std::vector<uint64_t> vars{10, 20};
  patches.apply(vars);
  ASSERT_EQ(words[0], 10u);
  ASSERT_EQ(words[1], 20u);

  // Poke both words behind the engine's back: an unchanged variable must not be rewritten.
  words[0] = 0xdead;
  words[1] = 0xbeef;
  vars[1] = 21;
  patches.apply(vars);
  EXPECT_EQ(words[0], 0xdeadu);
  EXPECT_EQ(words[1], 21u);
}

TEST_F(PatchListTest, InvalidateRewritesEverything) {
  patches.add(Sym(Var{0}), at(0));
  std::vector<uint64_t> vars{7};
  patches.apply(vars);
  words[0] = 0;
  patches.apply(vars);
  EXPECT_EQ(words[0], 0u);
  patches.invalidate();
  patches.apply(vars);
  EXPECT_EQ(words[0], 7u);
}

TEST_F(PatchListTest, PatchAddedAfterApplyIsWrittenNextTime) {
  patches.add(Sym(Var{0}), at(0));
  std::vector<uint64_t> vars{7};
  patches.apply(vars);
  patches.add(Sym(Var{0}), at(5));
  EXPECT_TRUE(patches.would_change(vars));
  patches.apply(vars);
  EXPECT_EQ(words[5], 7u);
}

TEST_F(PatchListTest, WouldChange) {
  patches.add(Sym(Var{1}), at(0));
  std::vector<uint64_t> vars{0, 3};
  EXPECT_TRUE(patches.would_change(vars));  // never applied
  patches.apply(vars);
  EXPECT_FALSE(patches.would_change(vars));
  vars[0] = 99;  // a variable with no patches does not count
  EXPECT_FALSE(patches.would_change(vars));
  vars[1] = 4;
  EXPECT_TRUE(patches.would_change(vars));
}

TEST_F(PatchListTest, MissingVariableThrowsAndWritesNothing) {
  patches.add(Sym(Var{0}), at(0));
  patches.add(Sym(Var{2}), at(2));
  std::vector<uint64_t> vars{5, 6};  // no value for v2
  try {
    patches.apply(vars);
    FAIL() << "apply with a missing variable did not throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("v2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(words[0], 0u);  // v0 had a value but nothing may be written
  EXPECT_THROW(patches.would_change(vars), InvalidArgument);
}

TEST_F(PatchListTest, RegionBaseMoves) {
  patches.add(Sym(Var{0}), at(1));
  std::array<uint32_t, 16> other{};
  patches.set_base(region, reinterpret_cast<std::byte*>(other.data()));
  std::vector<uint64_t> vars{42};
  patches.apply(vars);
  EXPECT_EQ(other[1], 42u);
  EXPECT_EQ(words[1], 0u);
  EXPECT_THROW(patches.set_base(PatchList::kAbsolute, nullptr), InvalidArgument);
}

TEST_F(PatchListTest, AbsolutePatchesAreCounted) {
  uint64_t side[2] = {};
  EXPECT_FALSE(patches.has_absolute());
  patches.add(Var{3} + 1, {PatchList::kAbsolute, reinterpret_cast<uint64_t>(&side[1]), PatchList::Kind::u64});
  EXPECT_TRUE(patches.has_absolute());
  EXPECT_EQ(patches.size(), 1u);
  std::vector<uint64_t> vars{0, 0, 0, 41};
  patches.apply(vars);
  EXPECT_EQ(side[1], 42u);
  EXPECT_EQ(side[0], 0u);
  EXPECT_THROW(patches.add(Sym(Var{0}), {PatchList::kAbsolute, 0, PatchList::Kind::u32}), InvalidArgument);
}

TEST(SymTest, Eval) {
  std::vector<uint64_t> vars{100, 200};
  EXPECT_EQ(Sym(5).eval(vars), 5u);
  EXPECT_EQ((Var{1} + 3).eval(vars), 203u);
  EXPECT_EQ((Var{0} - 1).eval(vars), 99u);
  EXPECT_EQ(((Var{0} + 10) - 4).eval(vars), 106u);
  EXPECT_THROW(Sym(Var{2}).eval(vars), InvalidArgument);
  EXPECT_TRUE(Sym(7).is_const());
  EXPECT_FALSE(Sym(Var{0}).is_const());
}

}  // namespace
}  // namespace hcq
