// Kernel cache documents cuDNN 9.19 wrote on the CPU (no GPU), for tests that change one thing
// in a real document. The same documents seed the fuzz corpus (tests/fuzz/corpus).
#pragma once

#include "backend/library.hpp"

#include <cudnn.h>
#include <boost/test/unit_test.hpp>

#include <string>

namespace dnngraph::testing {

// The documents below are cuDNN 9.19's; another cuDNN refuses them at from_json ("another
// cudnnVersion"). Cases that need cuDNN to take them carry this precondition, so on another
// loaded cuDNN they are reported skipped with the reason, never passed.
inline boost::test_tools::assertion_result loaded_cudnn_is_9_19(boost::unit_test::test_unit_id) {
  const auto loaded = dnngraph::backend::lib::cudnnGetVersion();
  boost::test_tools::assertion_result result(loaded / 100 == 919);
  result.message() << "the stored kernel cache documents are cuDNN 9.19's; cuDNN " << loaded
                   << " is loaded";
  return result;
}

// Documents cuDNN 9.19 wrote on the CPU for dynamic-shape operation graphs (matmul; conv 3x3 +
// ReLU; a sum reduction), as tests/fuzz/corpus/kernel_cache_json holds them.
inline const std::string matmul =
    R"({"cudnnVersion":91900,"schemaVersion":4,"operationGraph":{"finalizeMode":"BLAS_MATMUL",)"
    R"("tensors":[{"name":"1","dataType":"CUDNN_DATA_HALF","dim":[1,64,32],"stride":[2048,32,1],)"
    R"("isVirtual":false,"isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"2","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[1,32,16],"stride":[512,16,1],"isVirtual":false,"isByValue":false,"vectCount":1,)"
    R"("vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"3",)"
    R"("dataType":"CUDNN_DATA_HALF","dim":[1,64,16],"stride":[1024,16,1],"isVirtual":false,)"
    R"("isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"}],"nodes":[{"operation":)"
    R"("CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR","mathPrec":"CUDNN_DATA_FLOAT","matA":"1",)"
    R"("matB":"2","matC":"3"}],"isDynamicShapeEnabled":true},"kernel_cache":[]})";

inline const std::string conv_relu =
    R"({"cudnnVersion":91900,"schemaVersion":4,"operationGraph":{"finalizeMode":)"
    R"("GENERIC_CONV_FUSION","tensors":[{"name":"11","dataType":"CUDNN_DATA_HALF","dim":[1,8,16,16],)"
    R"("stride":[2048,256,16,1],"isVirtual":false,"isByValue":false,"vectCount":1,"vectDim":-1,)"
    R"("ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"12","dataType":)"
    R"("CUDNN_DATA_HALF","dim":[8,8,3,3],"stride":[72,9,3,1],"isVirtual":false,"isByValue":false,)"
    R"("vectCount":1,"vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},)"
    R"({"name":"13","dataType":"CUDNN_DATA_HALF","dim":[1,8,16,16],"stride":[2048,256,16,1],)"
    R"("isVirtual":true,"isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"14","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[1,8,16,16],"stride":[2048,256,16,1],"isVirtual":false,"isByValue":false,)"
    R"("vectCount":1,"vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"}],)"
    R"("nodes":[{"operation":"CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR","mode":)"
    R"("CUDNN_CROSS_CORRELATION","mathPrec":"CUDNN_DATA_FLOAT","alpha":1.0,"beta":0.0,)"
    R"("pad":[1,1],"stride":[1,1],"dilation":[1,1],"X":"11","W":"12","Y":"13"},{"operation":)"
    R"("CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR","pointwiseMode":"CUDNN_POINTWISE_RELU_FWD",)"
    R"("mathPrec":"CUDNN_DATA_FLOAT","upperClip":1.7976931348623157e308,"lowerClip":0.0,)"
    R"("lowerClipSlope":0.0,"alpha1":1.0,"alpha2":1.0,"X":"13","Y":"14"}],)"
    R"("isDynamicShapeEnabled":true},"kernel_cache":[]})";

inline const std::string reduction =
    R"({"cudnnVersion":91900,"schemaVersion":4,"operationGraph":{"finalizeMode":)"
    R"("GENERIC_POINTWISE_FUSION","tensors":[{"name":"21","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[1,64,32],"stride":[2048,32,1],"isVirtual":false,"isByValue":false,"vectCount":1,)"
    R"("vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"22",)"
    R"("dataType":"CUDNN_DATA_HALF","dim":[1,64,1],"stride":[64,1,1],"isVirtual":false,)"
    R"("isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"}],"nodes":[{"operation":)"
    R"("CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR","reductionOp":"CUDNN_REDUCE_TENSOR_ADD",)"
    R"("mathPrec":"CUDNN_DATA_FLOAT","isDeterministic":false,"X":"21","Y":"22"}],)"
    R"("isDynamicShapeEnabled":true},"kernel_cache":[]})";

// Documents cuDNN 9.19 wrote on the CPU for node kinds beyond those (issue 35): max pooling with
// an index; concatenate + ReLU; a grouped conv_dgrad (4 groups).
inline const std::string max_pool =
    R"({"cudnnVersion":91900,"schemaVersion":4,"operationGraph":{"finalizeMode":"RESAMPLE_FWD",)"
    R"("tensors":[{"name":"1","dataType":"CUDNN_DATA_HALF","dim":[4,32,8,8],"stride":[2048,1,256,)"
    R"(32],"isVirtual":false,"isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"10","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[4,32,4,4],"stride":[512,1,128,32],"isVirtual":false,"isByValue":false,"vectCount":1,)"
    R"("vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"11",)"
    R"("dataType":"CUDNN_DATA_INT8","dim":[4,32,4,4],"stride":[512,1,128,32],"isVirtual":false,)"
    R"("isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"}],)"
    R"("nodes":[{"operation":"CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR","X":"1","Y":"10",)"
    R"("Idx":"11","alpha":1.0,"beta":0.0,"mode":"CUDNN_RESAMPLE_MAXPOOL","nbSpatialDims":2,)"
    R"("windowDim":[[2,1],[2,1]],"prePad":[[0,1],[0,1]],"postPad":[[0,1],[0,1]],"stride":[[2,1],[2,)"
    R"(1]],"compType":"CUDNN_DATA_FLOAT","nanOpt":"CUDNN_PROPAGATE_NAN",)"
    R"("paddingMode":"CUDNN_NEG_INF_PAD"}],"isDynamicShapeEnabled":true},"kernel_cache":[]})";

inline const std::string concatenate =
    R"({"cudnnVersion":91900,"schemaVersion":4,)"
    R"("operationGraph":{"finalizeMode":"GENERIC_POINTWISE_FUSION","tensors":[{"name":"1",)"
    R"("dataType":"CUDNN_DATA_HALF","dim":[2,8,16],"stride":[128,16,1],"isVirtual":false,)"
    R"("isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"2","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[2,24,16],"stride":[384,16,1],"isVirtual":false,"isByValue":false,"vectCount":1,)"
    R"("vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"10",)"
    R"("dataType":"CUDNN_DATA_HALF","dim":[2,32,16],"stride":[512,16,1],"isVirtual":false,)"
    R"("isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"11","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[2,32,16],"stride":[512,16,1],"isVirtual":true,"isByValue":false,"vectCount":1,)"
    R"("vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"}],)"
    R"("nodes":[{"operation":"CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR","axis":1,)"
    R"("inplaceIndex":-1,"inputDescs":["1","2"],"outputDesc":"11"},)"
    R"({"operation":"CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR",)"
    R"("pointwiseMode":"CUDNN_POINTWISE_RELU_FWD","mathPrec":"CUDNN_DATA_FLOAT",)"
    R"("upperClip":1.7976931348623157e308,"lowerClip":0.0,"lowerClipSlope":0.0,"alpha1":1.0,)"
    R"("alpha2":1.0,"X":"11","Y":"10"}],"isDynamicShapeEnabled":true},"kernel_cache":[]})";

inline const std::string grouped_conv_dgrad =
    R"({"cudnnVersion":91900,"schemaVersion":4,"operationGraph":{"finalizeMode":"CONV_BWD_DATA",)"
    R"("tensors":[{"name":"1","dataType":"CUDNN_DATA_HALF","dim":[2,64,9,11],"stride":[6336,1,704,)"
    R"(64],"isVirtual":false,"isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"2","dataType":"CUDNN_DATA_HALF",)"
    R"("dim":[64,8,3,3],"stride":[72,1,24,8],"isVirtual":false,"isByValue":false,"vectCount":1,)"
    R"("vectDim":-1,"ptrAlignment":16,"reordering":"CUDNN_TENSOR_REORDERING_NONE"},{"name":"10",)"
    R"("dataType":"CUDNN_DATA_HALF","dim":[2,32,9,11],"stride":[3168,1,352,32],"isVirtual":false,)"
    R"("isByValue":false,"vectCount":1,"vectDim":-1,"ptrAlignment":16,)"
    R"("reordering":"CUDNN_TENSOR_REORDERING_NONE"}],)"
    R"("nodes":[{"operation":"CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR",)"
    R"("mode":"CUDNN_CROSS_CORRELATION","mathPrec":"CUDNN_DATA_FLOAT","alpha":1.0,"beta":0.0,)"
    R"("pad":[1,1],"stride":[1,1],"dilation":[1,1],"dX":"10","W":"2","dY":"1","groupCount":4}],)"
    R"("isDynamicShapeEnabled":true},"kernel_cache":[]})";

}  // namespace dnngraph::testing
