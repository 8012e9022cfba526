// One test per validation rule: a valid call is broken in exactly one way; the call must fail
// with the right status, a message naming the argument, and leave out / lse / workspace as they
// were.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <limits>
#include <string>
#include <vector>

#include "ctxattn/ctxattn.h"
#include "ctxattn/ctxattn.hpp"

namespace {

constexpr uint8_t kPoison = 0xAB;

// A small valid problem on host buffers: 2 requests, GQA 2:1, page size 4.
struct SmallProblem {
  static constexpr int kB = 2, kHq = 4, kHkv = 2, kD = 16, kN = 4, kP = 6, kMaxPages = 3;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> block_tables{0, 1, 2, 3, 4, 5};
  std::vector<int32_t> seq_lens{5, 4};
  std::vector<int32_t> cu_q{0, 3, 5};
  std::vector<int32_t> cu_kv{0, 5, 9};
  std::vector<uint8_t> out, out_scale, workspace;
  std::vector<float> lse;
  ctxattn::Args args;

  SmallProblem() {
    const int T = cu_q.back();
    q.assign(static_cast<size_t>(T) * kHq * kD, 0x3f80);  // bf16 1.0
    k.assign(static_cast<size_t>(kP) * kHkv * kN * kD, 0x3f80);
    v = k;
    out.assign(q.size() * 2, kPoison);
    lse.assign(static_cast<size_t>(T) * kHq, 0.0f);
    std::memset(lse.data(), kPoison, lse.size() * sizeof(float));
    workspace.assign(1 << 16, kPoison);
    out_scale.assign(128 * 4, kPoison);

    args.num_tokens = T;
    args.num_qo_heads = kHq;
    args.num_kv_heads = kHkv;
    args.head_dim = kD;
    args.page_size = kN;
    args.num_pages = kP;
    args.batch_size = kB;
    args.max_pages_per_seq = kMaxPages;
    args.max_q_len = 3;
    args.max_kv_len = 5;
    args.query = q.data();
    args.query_stride_token = kHq * kD;
    args.query_stride_head = kD;
    args.k_cache = k.data();
    args.v_cache = v.data();
    args.k_strides[0] = args.v_strides[0] = kHkv * kN * kD;
    args.k_strides[1] = args.v_strides[1] = kN * kD;
    args.k_strides[2] = args.v_strides[2] = kD;
    args.block_tables = block_tables.data();
    args.block_tables_stride = kMaxPages;
    args.seq_lens = seq_lens.data();
    args.cum_seq_lens_q = cu_q.data();
    args.cum_seq_lens_kv = cu_kv.data();
    args.bmm1_scale = 0.25f;
    args.out = out.data();
    args.out_stride_token = kHq * kD;
    args.out_stride_head = kD;
    args.lse = lse.data();
    args.lse_stride_token = kHq;
    args.lse_stride_head = 1;
    args.workspace = workspace.data();
    args.workspace_size = workspace.size();
  }

  // Switches the output to nvfp4 with a scale buffer of the right size.
  void use_nvfp4() {
    args.out_dtype = CTXATTN_DTYPE_NVFP4;
    args.out_stride_token = kHq * kD / 2;
    args.out_stride_head = kD / 2;
    args.out_scale = out_scale.data();
    args.out_scale_size_bytes = static_cast<int64_t>(out_scale.size());
  }

  bool untouched() const {
    auto all_poison = [](const uint8_t* p, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        if (p[i] != kPoison) return false;
      }
      return true;
    };
    return all_poison(out.data(), out.size()) &&
           all_poison(reinterpret_cast<const uint8_t*>(lse.data()), lse.size() * sizeof(float)) &&
           all_poison(workspace.data(), workspace.size()) && all_poison(out_scale.data(), out_scale.size());
  }
};

struct Rule {
  const char* name;
  std::function<void(SmallProblem&)> mutate;
  ctxattn_status_t status;
  const char* names;  // the argument the message must name
};

// Short test names in ctest output instead of a byte dump of the parameter.
void PrintTo(const Rule& rule, std::ostream* os) { *os << rule.name; }

class ValidationRule : public ::testing::TestWithParam<Rule> {};

TEST(Validation, BaselineIsValidAndComputes) {
  SmallProblem pb;
  ASSERT_EQ(ctxattn_validate(&pb.args), CTXATTN_STATUS_OK) << ctxattn_last_error();
  ASSERT_EQ(ctxattn_batch_context_with_kv_cache(&pb.args), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_STREQ(ctxattn_last_error(), "");
  EXPECT_FALSE(pb.untouched());
  // V is all ones and bmm2_scale is 1, so every output element is bf16 1.0.
  const uint16_t* o = reinterpret_cast<const uint16_t*>(pb.out.data());
  for (size_t i = 0; i < pb.q.size(); ++i) ASSERT_EQ(o[i], 0x3f80) << "element " << i;
}

TEST_P(ValidationRule, FailsNamingTheArgumentAndWritesNothing) {
  const Rule& rule = GetParam();
  SmallProblem pb;
  rule.mutate(pb);
  const ctxattn_status_t s = ctxattn_batch_context_with_kv_cache(&pb.args);
  const std::string msg = ctxattn_last_error();
  EXPECT_EQ(s, rule.status) << msg;
  EXPECT_NE(msg.find(rule.names), std::string::npos) << "message does not name '" << rule.names << "': " << msg;
  EXPECT_TRUE(pb.untouched()) << "a failing call wrote to out, lse, scales or workspace";
  // The same verdict from validation alone.
  EXPECT_EQ(ctxattn_validate(&pb.args), rule.status);
}

constexpr ctxattn_status_t kInvalid = CTXATTN_STATUS_INVALID_ARGUMENT;
constexpr ctxattn_status_t kType = CTXATTN_STATUS_INVALID_TYPE;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const Rule kRules[] = {
    {"StructSize", [](SmallProblem& p) { p.args.struct_size -= 8; }, kInvalid, "struct_size"},
    {"DeviceType", [](SmallProblem& p) { p.args.device_type = static_cast<ctxattn_device_type_t>(7); }, kInvalid, "device_type"},
    {"CudaBackendOnCpu", [](SmallProblem& p) { p.args.backend = CTXATTN_BACKEND_CUDA_PORTABLE; }, kInvalid, "backend"},
    {"BackendCode", [](SmallProblem& p) { p.args.backend = static_cast<ctxattn_backend_t>(9); }, kInvalid, "backend"},
    {"NegativeTokens", [](SmallProblem& p) { p.args.num_tokens = -1; }, kInvalid, "query"},
    {"ZeroQoHeads", [](SmallProblem& p) { p.args.num_qo_heads = 0; }, kInvalid, "num_qo_heads"},
    {"ZeroKvHeads", [](SmallProblem& p) { p.args.num_kv_heads = 0; }, kInvalid, "num_kv_heads"},
    {"GqaDivisibility", [](SmallProblem& p) { p.args.num_kv_heads = 3; }, kInvalid, "num_kv_heads"},
    {"HeadDimMultipleOf8", [](SmallProblem& p) { p.args.head_dim = 12; }, kInvalid, "head_dim"},
    {"HeadDimTooLarge", [](SmallProblem& p) { p.args.head_dim = 520; }, kInvalid, "head_dim"},
    {"PageSizePowerOfTwo", [](SmallProblem& p) { p.args.page_size = 3; }, kInvalid, "page_size"},
    {"PageSizeTooLarge", [](SmallProblem& p) { p.args.page_size = 2048; }, kInvalid, "page_size"},
    {"NegativePages", [](SmallProblem& p) { p.args.num_pages = -2; }, kInvalid, "num_pages"},
    {"NegativeBatch", [](SmallProblem& p) { p.args.batch_size = -1; }, kInvalid, "batch_size"},
    {"NegativeMaxPages", [](SmallProblem& p) { p.args.max_pages_per_seq = -1; }, kInvalid, "block_tables"},
    {"NegativeMaxQLen", [](SmallProblem& p) { p.args.max_q_len = -1; }, kInvalid, "max_q_len"},
    {"NegativeMaxKvLen", [](SmallProblem& p) { p.args.max_kv_len = -1; }, kInvalid, "max_kv_len"},
    {"RowIndexOverflow", [](SmallProblem& p) { p.args.num_tokens = int64_t{1} << 30; }, kInvalid, "overflows"},
    {"QueryDtype", [](SmallProblem& p) { p.args.query_dtype = CTXATTN_DTYPE_FLOAT32; }, kType, "query"},
    {"KvDtype", [](SmallProblem& p) { p.args.kv_dtype = CTXATTN_DTYPE_INT32; }, kType, "kv_cache"},
    {"KvDtypeMismatch", [](SmallProblem& p) { p.args.kv_dtype = CTXATTN_DTYPE_FLOAT16; }, kType, "kv_cache"},
    {"Fp8QueryNeedsFp8Kv",
     [](SmallProblem& p) {
       p.args.query_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
       p.args.kv_dtype = CTXATTN_DTYPE_BFLOAT16;
     },
     kType, "kv_cache"},
    {"NullQuery", [](SmallProblem& p) { p.args.query = nullptr; }, kInvalid, "query"},
    {"NegativeQueryStride", [](SmallProblem& p) { p.args.query_stride_head = -16; }, kInvalid, "query"},
    {"KvLayout", [](SmallProblem& p) { p.args.kv_layout = static_cast<ctxattn_kv_layout_t>(4); }, kInvalid, "kv_layout"},
    {"NullK", [](SmallProblem& p) { p.args.k_cache = nullptr; }, kInvalid, "kv_cache"},
    {"NullV", [](SmallProblem& p) { p.args.v_cache = nullptr; }, kInvalid, "kv_cache"},
    {"NegativeKvStride", [](SmallProblem& p) { p.args.k_strides[2] = -16; }, kInvalid, "kv_cache (K)"},
    {"InPageOffsetOverflow", [](SmallProblem& p) { p.args.v_strides[1] = int64_t{1} << 31; }, kInvalid, "kv_cache (V)"},
    {"PageOffsetOverflow", [](SmallProblem& p) { p.args.k_strides[0] = int64_t{1} << 62; }, kInvalid, "kv_cache (K)"},
    {"NullBlockTables", [](SmallProblem& p) { p.args.block_tables = nullptr; }, kInvalid, "block_tables"},
    {"BlockTablesStride", [](SmallProblem& p) { p.args.block_tables_stride = 2; }, kInvalid, "block_tables"},
    {"NullSeqLens", [](SmallProblem& p) { p.args.seq_lens = nullptr; }, kInvalid, "seq_lens"},
    {"SeqLensDtype", [](SmallProblem& p) { p.args.seq_lens_dtype = CTXATTN_DTYPE_FLOAT32; }, kType, "seq_lens"},
    {"NullCumSeqLensQ", [](SmallProblem& p) { p.args.cum_seq_lens_q = nullptr; }, kInvalid, "cum_seq_lens_q"},
    {"Bmm1ScaleNaN", [](SmallProblem& p) { p.args.bmm1_scale = kNaN; }, kInvalid, "bmm1_scale"},
    {"Bmm2ScaleInf", [](SmallProblem& p) { p.args.bmm2_scale = kInf; }, kInvalid, "bmm2_scale"},
    {"CausalFlag", [](SmallProblem& p) { p.args.causal = 2; }, kInvalid, "causal"},
    {"WindowLeft", [](SmallProblem& p) { p.args.window_left = -5; }, kInvalid, "window_left"},
    {"WindowNeedsCausal",
     [](SmallProblem& p) {
       p.args.causal = 0;
       p.args.window_left = 8;
     },
     kInvalid, "window_left"},
    {"OutDtype", [](SmallProblem& p) { p.args.out_dtype = CTXATTN_DTYPE_FLOAT32; }, kType, "out_dtype"},
    {"NullOut", [](SmallProblem& p) { p.args.out = nullptr; }, kInvalid, "out"},
    {"NegativeOutStride", [](SmallProblem& p) { p.args.out_stride_token = -1; }, kInvalid, "out"},
    {"OverlappingOut", [](SmallProblem& p) { p.args.out_stride_head = 8; }, kInvalid, "out"},
    {"Nvfp4HeadDim",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.head_dim = 24;
       p.args.query_stride_head = p.args.k_strides[2] = p.args.v_strides[2] = 24;
       p.args.out_stride_head = 12;
       p.args.out_stride_token = 4 * 12;
     },
     kInvalid, "head_dim"},
    {"OSfVecSize",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.o_sf_vec_size = 32;
     },
     kInvalid, "o_sf_vec_size"},
    {"OSfScale",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.o_sf_scale = 0.0f;
     },
     kInvalid, "o_sf_scale"},
    {"NullScaleTensor",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.out_scale = nullptr;
     },
     kInvalid, "scale"},
    {"ScaleTensorTooSmall",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.out_scale_size_bytes = 100;
     },
     kInvalid, "scale tensor"},
    {"ScaleStartIndexNeedsRoom",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.out_scale_start_index = 126;
     },
     kInvalid, "scale_start_index"},
    {"NegativeScaleStart",
     [](SmallProblem& p) {
       p.use_nvfp4();
       p.args.out_scale_start_index = -1;
     },
     kInvalid, "scale_start_index"},
    {"OverlappingLse", [](SmallProblem& p) { p.args.lse_stride_token = 2; }, kInvalid, "lse"},
    {"NegativeLseStride", [](SmallProblem& p) { p.args.lse_stride_head = -1; }, kInvalid, "lse"},
    {"EnablePdl", [](SmallProblem& p) { p.args.enable_pdl = 5; }, kInvalid, "enable_pdl"},
    {"NumThreads", [](SmallProblem& p) { p.args.num_threads = -3; }, kInvalid, "num_threads"},
    {"CheckMetadataFlag", [](SmallProblem& p) { p.args.check_metadata = 3; }, kInvalid, "check_metadata"},
    {"WorkspaceTooSmall", [](SmallProblem& p) { p.args.workspace_size = 64; }, kInvalid, "workspace_buffer"},
    {"NullWorkspace", [](SmallProblem& p) { p.args.workspace = nullptr; }, kInvalid, "workspace_buffer"},
    {"MisalignedWorkspace",
     [](SmallProblem& p) {
       p.args.workspace = p.workspace.data() + 8;
       p.args.workspace_size = p.workspace.size() - 8;
     },
     kInvalid, "workspace_buffer"},
    {"NegativeCudaDevice",
     [](SmallProblem& p) {
       p.args.device_type = CTXATTN_DEVICE_CUDA;
       p.args.device_index = -1;
     },
     kInvalid, "device"},
};

INSTANTIATE_TEST_SUITE_P(Rules, ValidationRule, ::testing::ValuesIn(kRules),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

TEST(Validation, NullArgs) {
  EXPECT_EQ(ctxattn_batch_context_with_kv_cache(nullptr), CTXATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ctxattn_last_error()).find("args"), std::string::npos);
}

TEST(Validation, WorkspaceSizeIsReportedAndEnough) {
  SmallProblem pb;
  size_t need = 0;
  ASSERT_EQ(ctxattn_workspace_size(&pb.args, &need), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_GT(need, 0u);
  pb.args.workspace_size = need;
  EXPECT_EQ(ctxattn_validate(&pb.args), CTXATTN_STATUS_OK) << ctxattn_last_error();
  pb.args.workspace_size = need - 1;
  EXPECT_EQ(ctxattn_validate(&pb.args), CTXATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ctxattn_workspace_size(&pb.args, nullptr), CTXATTN_STATUS_INVALID_ARGUMENT);
}

TEST(Validation, CudaRequestWithoutCudaSupport) {
  if (ctxattn_has_cuda()) GTEST_SKIP() << "a CUDA device is present: covered by the CUDA tests";
  SmallProblem pb;
  pb.args.device_type = CTXATTN_DEVICE_CUDA;
  EXPECT_EQ(ctxattn_batch_context_with_kv_cache(&pb.args), CTXATTN_STATUS_NO_DEVICE_SUPPORT);
  EXPECT_NE(std::string(ctxattn_last_error()).find("CUDA"), std::string::npos);
  EXPECT_TRUE(pb.untouched());
}

TEST(Validation, CppWrapperThrowsWithStatus) {
  SmallProblem pb;
  pb.args.head_dim = 12;
  try {
    ctxattn::batch_context_with_kv_cache(pb.args);
    FAIL() << "expected ctxattn::Error";
  } catch (const ctxattn::Error& e) {
    EXPECT_EQ(e.status(), CTXATTN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos);
  }
  EXPECT_TRUE(pb.untouched());
}

TEST(Validation, ErrorMessageIsThreadLocalAndClearedOnSuccess) {
  SmallProblem bad;
  bad.args.page_size = 3;
  ASSERT_NE(ctxattn_validate(&bad.args), CTXATTN_STATUS_OK);
  ASSERT_NE(std::string(ctxattn_last_error()), "");
  SmallProblem good;
  ASSERT_EQ(ctxattn_validate(&good.args), CTXATTN_STATUS_OK);
  EXPECT_STREQ(ctxattn_last_error(), "");
}

TEST(Validation, EmptyBatchWritesNothing) {
  SmallProblem pb;
  pb.args.batch_size = 0;
  EXPECT_EQ(ctxattn_batch_context_with_kv_cache(&pb.args), CTXATTN_STATUS_OK) << ctxattn_last_error();
  EXPECT_TRUE(pb.untouched());
}

}  // namespace
