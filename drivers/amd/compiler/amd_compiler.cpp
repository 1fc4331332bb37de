#include "amd/compiler/amd_compiler.hpp"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/TargetParser.h>
#include <llvm/TargetParser/Triple.h>

#include <cerrno>
#include <memory>
#include <optional>

#include "amd/codeobj/code_object.hpp"
#include "common/kernel_abi_text.hpp"
#include "common/subprocess.hpp"
#include "hcq/error.hpp"
#include "hcq/kernel_abi.h"

namespace hcq::amd {
namespace {

constexpr const char* kTriple = "amdgcn-amd-amdhsa";
constexpr int kCodeObjectVersion = 500;  // the module flag's encoding of code object v5
constexpr const char* kSourceSection = ".hcq.source";

void init_llvm_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();  // module inline assembly (.hcq.source)
  });
}

// Collects LLVM's diagnostics instead of letting an error end the process.
struct Diagnostics {
  std::string errors, warnings;
  static void handle(const llvm::DiagnosticInfo* di, void* ctx) {
    auto* self = static_cast<Diagnostics*>(ctx);
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::DiagnosticPrinterRawOStream printer(os);
    di->print(printer);
    os.flush();
    if (di->getSeverity() == llvm::DS_Error) self->errors += text + "\n";
    else if (di->getSeverity() == llvm::DS_Warning) self->warnings += text + "\n";
  }
};

std::string first_line(const std::vector<uint8_t>& out) {
  std::string s(out.begin(), out.end());
  return s.substr(0, s.find('\n'));
}

// The module inline assembly that places `text` in a non-allocated section.
std::string section_asm(std::string_view section, std::string_view text) {
  std::string s = cat(".pushsection ", section, ",\"\",@progbits\n");
  for (size_t i = 0; i < text.size(); i += 32) {
    s += ".byte ";
    for (size_t j = i; j < std::min(text.size(), i + 32); ++j)
      s += cat(j == i ? "" : ",", static_cast<unsigned>(static_cast<unsigned char>(text[j])));
    s += "\n";
  }
  return s + ".popsection\n";
}

// F_hcq_desc -> {nbufs, nvals}, or nullopt when the global is not a well-formed descriptor.
std::optional<std::pair<uint32_t, uint32_t>> read_desc(const llvm::GlobalVariable& gv) {
  if (!gv.hasInitializer()) return std::nullopt;
  const llvm::Constant* init = gv.getInitializer();
  uint64_t v[3];
  for (unsigned i = 0; i < 3; ++i) {
    const auto* ci = llvm::dyn_cast_or_null<llvm::ConstantInt>(init->getAggregateElement(i));
    if (!ci || ci->getBitWidth() != 32) return std::nullopt;
    v[i] = ci->getZExtValue();
  }
  if (v[0] != HCQ_KERNEL_MAGIC) return std::nullopt;
  return std::pair<uint32_t, uint32_t>{static_cast<uint32_t>(v[1]), static_cast<uint32_t>(v[2])};
}

// Turns `void F(void)` into `amdgpu_kernel void F(ptr addrspace(1) buf0, ..., i32 val0, ...)`: the body already reads
// its arguments through the kernarg segment pointer; the typed signature makes LLVM lay the segment out the same
// way and describe it in the metadata note.
void make_kernel(llvm::Module& m, llvm::Function& f, uint32_t nbufs, uint32_t nvals) {
  if (!f.arg_empty() || !f.getReturnType()->isVoidTy() || f.isDeclaration())
    throw CompileError(cat("AMD compile: HCQ_KERNEL function ", f.getName().str(), " is not a defined void(void)"));
  llvm::LLVMContext& ctx = m.getContext();
  std::vector<llvm::Type*> params(nbufs, llvm::PointerType::get(ctx, 1));
  params.insert(params.end(), nvals, llvm::Type::getInt32Ty(ctx));
  llvm::FunctionType* ft = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  llvm::Function* k = llvm::Function::Create(ft, llvm::GlobalValue::ExternalLinkage, "", &m);
  k->copyAttributesFrom(&f);
  k->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  k->setVisibility(llvm::GlobalValue::ProtectedVisibility);
  k->setDSOLocal(true);
  // Inferred for a callable function; a kernel gets its own from the backend.
  k->removeFnAttr("amdgpu-waves-per-eu");
  k->splice(k->end(), &f);
  for (uint32_t i = 0; i < nbufs + nvals; ++i) k->getArg(i)->setName(i < nbufs ? cat("buf", i) : cat("val", i - nbufs));
  k->takeName(&f);
  if (!f.use_empty())
    throw CompileError(cat("AMD compile: kernel ", k->getName().str(), " is called from device code"));
  f.eraseFromParent();
}

}  // namespace

AmdCompiler::AmdCompiler(std::string gfx, SourceLanguage lang, AmdToolchain tools)
    : gfx_(std::move(gfx)), lang_(lang), tools_(std::move(tools)) {}

void AmdCompiler::check_target() const {
  if (llvm::AMDGPU::parseArchAMDGCN(gfx_) != llvm::AMDGPU::GK_NONE) return;
  if (gfx_ == "gfx950")
    throw CompileError(cat("AMD compile for gfx950: LLVM ", LLVM_VERSION_STRING,
                           " cannot build gfx950 code (it arrived in LLVM 20); hcq encodes gfx950 packets, but its "
                           "kernels need a newer LLVM"));
  throw CompileError(cat("AMD compile: LLVM ", LLVM_VERSION_STRING, " does not know the target '", gfx_, "'"));
}

std::vector<std::string> AmdCompiler::c_flags() const {
  return {"-x",
          "c",
          "-std=c11",
          "-ffreestanding",
          "-fno-math-errno",
          "-target",
          kTriple,
          "-mcpu=" + gfx_,
          "-nogpulib",
          "-mcode-object-version=5",
          "-O2",
          "-emit-llvm",
          "-S"};
}

std::string AmdCompiler::options() const {
  std::string s = lang_ == SourceLanguage::c ? "lang=c" : "lang=llvm-ir";
  if (lang_ == SourceLanguage::c) {
    for (const std::string& f : c_flags()) s += " " + f;
    // The prelude is part of every C kernel: a changed ABI must not be served a cached binary built for the old one.
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (const char* c = drivers::kKernelAbiText; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
    s += cat(" prelude=", hex(h));
  }
  return s + " | ir: O2 codegen=Default reloc=pic cov5 +.hcq.source | link: -shared --no-undefined";
}

std::string AmdCompiler::identity() const {
  std::call_once(identity_once_, [this] {
    auto version_of = [](const std::string& tool) {
      try {
        const drivers::ToolResult r = drivers::run_tool({tool, "--version"}, {});
        return r.ok() ? first_line(r.out) : tool + " (unavailable)";
      } catch (const Error&) {
        return tool + " (unavailable)";
      }
    };
    identity_ = cat("LLVM ", LLVM_VERSION_STRING, "; ",
                    lang_ == SourceLanguage::c ? version_of(tools_.clang) + "; " : "", version_of(tools_.lld));
  });
  return identity_;
}

std::string AmdCompiler::c_to_ir(std::string_view source) const {
  check_target();
  std::vector<std::string> args{tools_.clang};
  for (const std::string& f : c_flags()) args.push_back(f);
  args.insert(args.end(), {"-o", "-", "-"});
  std::string text = drivers::kKernelAbiText;
  text += "\n#line 1 \"kernel.c\"\n";
  text += source;
  const drivers::ToolResult r = drivers::run_tool(args, text);
  if (r.spawn_error)
    throw CompileError(cat("AMD compiler: '", tools_.clang, "' could not run (", std::strerror(r.spawn_error),
                           "): install clang-19 (`apt-get install clang-19`)"));
  if (!r.ok())
    throw CompileError(
        cat("AMD kernel compile for ", gfx_, " failed (", tools_.clang, ", ", r.describe(), "):\n", r.err));
  return std::string(r.out.begin(), r.out.end());
}

std::vector<uint8_t> AmdCompiler::ir_to_object(std::string_view ir, bool rewrite_hcq_kernels,
                                               std::string_view embedded_source) const {
  check_target();
  init_llvm_once();
  llvm::LLVMContext ctx;
  Diagnostics diags;
  ctx.setDiagnosticHandlerCallBack(&Diagnostics::handle, &diags);

  llvm::SMDiagnostic parse_error;
  std::unique_ptr<llvm::Module> m =
      llvm::parseIR(llvm::MemoryBufferRef(llvm::StringRef(ir.data(), ir.size()), "kernel.ll"), parse_error, ctx);
  if (!m) {
    std::string text;
    llvm::raw_string_ostream os(text);
    parse_error.print("kernel.ll", os, false);
    throw CompileError(cat("AMD compile for ", gfx_, ": the LLVM IR does not parse:\n", os.str()));
  }
  if (m->getTargetTriple().empty()) m->setTargetTriple(kTriple);
  const llvm::Triple triple(m->getTargetTriple());
  if (triple.getArch() != llvm::Triple::amdgcn || triple.getOS() != llvm::Triple::AMDHSA)
    throw CompileError(
        cat("AMD compile for ", gfx_, ": module triple is '", m->getTargetTriple(), "', expected ", kTriple));

  std::string lookup_error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, lookup_error);
  if (!target) throw CompileError(cat("AMD compile: LLVM has no AMDGPU target: ", lookup_error));
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      kTriple, gfx_, "", llvm::TargetOptions{}, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Default));
  if (!tm) throw CompileError(cat("AMD compile: LLVM could not create a target machine for ", gfx_));
  m->setDataLayout(tm->createDataLayout());
  if (!m->getModuleFlag("amdhsa_code_object_version"))
    m->addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", kCodeObjectVersion);

  if (rewrite_hcq_kernels) {
    std::vector<std::pair<llvm::Function*, std::pair<uint32_t, uint32_t>>> kernels;
    for (llvm::GlobalVariable& gv : m->globals()) {
      const llvm::StringRef name = gv.getName();
      if (!name.ends_with("_hcq_desc")) continue;
      const auto desc = read_desc(gv);
      llvm::Function* f = m->getFunction(name.drop_back(9));
      if (!desc || !f) continue;
      if (desc->first + desc->second > 256)
        throw CompileError(cat("AMD compile: kernel ", f->getName().str(), " declares ", desc->first, " buffers and ",
                               desc->second, " values"));
      kernels.push_back({f, *desc});
    }
    if (kernels.empty())
      throw CompileError(
          cat("AMD compile for ", gfx_, ": no kernel found: declare one with HCQ_KERNEL(name, nbufs, nvals)"));
    for (auto& [f, d] : kernels) make_kernel(*m, *f, d.first, d.second);
  }

  {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (llvm::verifyModule(*m, &os))
      throw CompileError(cat("AMD compile for ", gfx_, ": the LLVM IR is invalid:\n", os.str()));
  }

  // O2, with the AMDGPU passes the target machine registers (the attributor infers which inputs kernels use).
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
    mpm.run(*m, mam);
  }
  if (!embedded_source.empty()) m->appendModuleInlineAsm(section_asm(kSourceSection, embedded_source));

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
      throw CompileError(cat("AMD compile: LLVM cannot emit object files for ", gfx_));
    pm.run(*m);
  }
  if (!diags.errors.empty()) throw CompileError(cat("AMD compile for ", gfx_, " failed:\n", diags.errors));
  return std::vector<uint8_t>(object.begin(), object.end());
}

std::vector<uint8_t> AmdCompiler::link(std::span<const uint8_t> object) const {
  const drivers::ToolResult r =
      drivers::run_tool({tools_.lld, "-shared", "--no-undefined", "/dev/fd/3", "-o", "-"}, {}, object);
  if (r.spawn_error)
    throw CompileError(cat("AMD compiler: '", tools_.lld, "' could not run (", std::strerror(r.spawn_error),
                           "): install lld-19 (`apt-get install lld-19`)"));
  if (!r.ok())
    throw CompileError(cat("AMD link for ", gfx_, " failed (", tools_.lld, ", ", r.describe(), "):\n", r.err));
  if (r.out.empty()) throw CompileError(cat("AMD link for ", gfx_, " produced nothing (", tools_.lld, ")"));
  return r.out;
}

std::vector<uint8_t> AmdCompiler::compile(std::string_view source) {
  check_target();
  std::vector<uint8_t> object =
      lang_ == SourceLanguage::c ? ir_to_object(c_to_ir(source), true, source) : ir_to_object(source, false, {});
  std::vector<uint8_t> code = link(object);
  // What we hand out must load: a linker surprise is caught here, not at dispatch.
  const CodeObject co = CodeObject::parse(code);
  if (co.gfx() != gfx_) throw CompileError(cat("AMD compile: asked for ", gfx_, ", the code object says ", co.gfx()));
  return code;
}

}  // namespace hcq::amd
