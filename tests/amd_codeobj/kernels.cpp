#include "kernels.hpp"

#include <map>
#include <mutex>

#include "amd/compiler/amd_compiler.hpp"

namespace hcq::amd::test {

const char* const kLdsIrSource = R"(
@tile = internal addrspace(3) global [256 x i32] poison, align 4

define amdgpu_kernel void @lds_reverse(ptr addrspace(1) %out, i32 %n) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %dp = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %szp = getelementptr i8, ptr addrspace(4) %dp, i64 4
  %sz = load i16, ptr addrspace(4) %szp
  %slot = getelementptr [256 x i32], ptr addrspace(3) @tile, i32 0, i32 %tid
  store i32 %tid, ptr addrspace(3) %slot
  call void @llvm.amdgcn.s.barrier()
  %sz32 = zext i16 %sz to i32
  %last = sub i32 %sz32, 1
  %rev = sub i32 %last, %tid
  %rslot = getelementptr [256 x i32], ptr addrspace(3) @tile, i32 0, i32 %rev
  %v = load i32, ptr addrspace(3) %rslot
  %o = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %o
  ret void
}
declare i32 @llvm.amdgcn.workitem.id.x()
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
declare void @llvm.amdgcn.s.barrier()
)";

namespace {
const std::vector<uint8_t>& compiled(const std::string& gfx, SourceLanguage lang, const char* src) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, std::vector<uint8_t>> cache;
  std::lock_guard lock(mu);
  auto key = std::make_pair(gfx, static_cast<int>(lang));
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, AmdCompiler(gfx, lang).compile(src)).first;
  return it->second;
}
}  // namespace

const std::vector<uint8_t>& axpb_code_object(const std::string& gfx) {
  return compiled(gfx, SourceLanguage::c, kAxpbSource);
}
const std::vector<uint8_t>& lds_code_object(const std::string& gfx) {
  return compiled(gfx, SourceLanguage::llvm_ir, kLdsIrSource);
}

}  // namespace hcq::amd::test
