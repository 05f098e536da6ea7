// Constant folding at import: the nodes whose inputs are all known at load (initializers,
// Constants, earlier folded values, and the shapes of computed tensors) are evaluated here, so that
// the shape arithmetic torch.onnx.export writes for `x.view(x.size(0), -1)`, channel shuffles and
// `F.interpolate(size=...)` (Shape, Gather, Unsqueeze, Concat, Div, ...) becomes the constant a
// Reshape or a Resize reads. Only the batch size is unknown at load: Shape gives it as a symbol
// (Constant::kBatch), carried through the ops that move values without computing on them, and
// "depends on N" (Constant::kDependsOnBatch) through the arithmetic; the reader that consumes the
// value decides whether it can do without it (a Reshape's first dimension can).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "formats/onnx_reader.h"

namespace infer::onnx_import {
namespace {

bool is_float(const Constant& c) { return !c.floats.empty() || (c.ints.empty() && c.is_float); }

// The value of element i as a double, and its symbol.
double value(const Constant& c, std::size_t i) {
  return is_float(c) ? static_cast<double>(c.floats[i]) : static_cast<double>(c.ints[i]);
}
unsigned char symbol(const Constant& c, std::size_t i) { return c.symbols.empty() ? Constant::kKnown : c.symbols[i]; }

std::size_t count_of(Importer& m, const onnx::NodeProto& node, const std::vector<long long>& dims) {
  std::size_t n = 1;
  for (long long d : dims) {
    if (d < 0) m.fail(node, "a folded tensor of shape " + shape_string(dims) + " has a negative dimension");
    if (d > 0 && n > kMaxFoldedValues / static_cast<std::size_t>(d)) {
      m.fail(node, "a folded tensor of shape " + shape_string(dims) + " is too large (more than " +
                       std::to_string(kMaxFoldedValues) + " values)");
    }
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

// An empty tensor of `dims` of the same type as `like`.
Constant shaped_like(Importer& m, const onnx::NodeProto& node, const Constant& like, std::vector<long long> dims) {
  Constant out;
  out.is_float = is_float(like);
  const std::size_t n = count_of(m, node, dims);
  out.dims = std::move(dims);
  if (out.is_float)
    out.floats.resize(n);
  else
    out.ints.resize(n);
  if (!like.symbols.empty()) out.symbols.assign(n, Constant::kKnown);
  return out;
}

// Copies element `from` of `src` to element `to` of `dst` (same type), with its symbol.
void copy_element(const Constant& src, std::size_t from, Constant& dst, std::size_t to) {
  if (dst.is_float)
    dst.floats[to] = src.floats[from];
  else
    dst.ints[to] = src.ints[from];
  if (!dst.symbols.empty()) dst.symbols[to] = symbol(src, from);
}

std::size_t element_count(const Constant& c) { return is_float(c) ? c.floats.size() : c.ints.size(); }

// An axis attribute or value in [-rank, rank) as an index in [0, rank).
std::size_t axis_index(Importer& m, const onnx::NodeProto& node, long long axis, std::size_t rank) {
  const long long r = static_cast<long long>(rank);
  if (axis < -r || axis >= r) {
    m.fail(node, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(rank));
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

// Integer values of a known constant (axes, starts, indices), refusing symbols.
std::vector<long long> known_ints(Importer& m, const onnx::NodeProto& node, const Constant& c, const char* what) {
  std::vector<long long> v;
  for (std::size_t i = 0; i < element_count(c); ++i) {
    if (symbol(c, i) != Constant::kKnown) m.fail(node, std::string(what) + " depends on the batch size");
    if (is_float(c)) m.fail(node, std::string(what) + " must be an integer tensor");
    v.push_back(c.ints[i]);
  }
  return v;
}

// The node's input `index` as a folded value; nullptr where it is absent (an optional input).
const Constant* optional_input(Importer& m, const onnx::NodeProto& node, int index) {
  if (index >= node.input_size() || node.input(index).empty()) return nullptr;
  return &m.value(node, index);
}

Constant shape(Importer& m, const onnx::NodeProto& node) {
  Constant out;
  const std::string x = node.input_size() > 0 ? node.input(0) : std::string();
  if (const Constant* c = m.find_constant(x)) {
    out.ints = c->dims;
  } else {
    const std::string layer = m.source(node, 0);
    const Dims d = m.shape_of(layer);
    out.ints = m.rank(layer) == 2   ? std::vector<long long>{0, d.c}
               : m.channels_last(x) ? std::vector<long long>{0, d.h, d.w, d.c}  // [N, H, W, C]
                                    : std::vector<long long>{0, d.c, d.h, d.w};
    out.symbols.assign(out.ints.size(), Constant::kKnown);
    out.symbols[0] = Constant::kBatch;
  }
  // Opset 15: start and end select a range of the dimensions, as a Slice would.
  const long long rank = static_cast<long long>(out.ints.size());
  auto clamp = [&](long long v) { return std::clamp(v < 0 ? v + rank : v, 0LL, rank); };
  const long long start = clamp(int_attr(node, "start", 0)), end = clamp(int_attr(node, "end", rank));
  std::vector<long long> ints;
  std::vector<unsigned char> symbols;
  for (long long i = start; i < end; ++i) {
    ints.push_back(out.ints[static_cast<std::size_t>(i)]);
    if (!out.symbols.empty()) symbols.push_back(out.symbols[static_cast<std::size_t>(i)]);
  }
  out.ints = std::move(ints);
  out.symbols = std::move(symbols);
  out.dims = {static_cast<long long>(out.ints.size())};
  return out;
}

Constant gather(Importer& m, const onnx::NodeProto& node) {
  const Constant& data = m.value(node, 0);
  const Constant& idx = m.value(node, 1);
  if (data.dims.empty()) m.fail(node, "gathers from a scalar");
  const std::size_t axis = axis_index(m, node, int_attr(node, "axis", 0), data.dims.size());
  const std::vector<long long> indices = known_ints(m, node, idx, "the indices");
  const long long extent = data.dims[axis];
  std::vector<long long> dims(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
  Constant out = shaped_like(m, node, data, dims);
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(data.dims[i]);
  for (std::size_t i = axis + 1; i < data.dims.size(); ++i) inner *= static_cast<std::size_t>(data.dims[i]);
  std::size_t to = 0;
  for (std::size_t o = 0; o < outer; ++o) {
    for (long long k : indices) {
      if (k < -extent || k >= extent) {
        m.fail(node, "index " + std::to_string(k) + " is out of range for a dimension of " + std::to_string(extent));
      }
      const std::size_t at = static_cast<std::size_t>(k < 0 ? k + extent : k);
      for (std::size_t i = 0; i < inner; ++i)
        copy_element(data, (o * static_cast<std::size_t>(extent) + at) * inner + i, out, to++);
    }
  }
  return out;
}

// Unsqueeze and Squeeze: the values unchanged, the dimensions with ones inserted or removed. The
// axes: an attribute before opset 13, the second input from 13 on.
Constant reshaped_axes(Importer& m, const onnx::NodeProto& node, bool insert) {
  const Constant& data = m.value(node, 0);
  std::vector<long long> axes;
  if (m.opset() >= 13) {
    if (const Constant* a = optional_input(m, node, 1)) axes = known_ints(m, node, *a, "the axes");
  } else {
    axes = ints_attr(node, "axes");
  }
  Constant out = data;
  if (insert) {
    const std::size_t rank = data.dims.size() + axes.size();
    std::vector<bool> added(rank, false);
    for (long long a : axes) {
      const std::size_t i = axis_index(m, node, a, rank);
      if (added[i]) m.fail(node, "axis " + std::to_string(a) + " is given twice");
      added[i] = true;
    }
    out.dims.clear();
    std::size_t from = 0;
    for (std::size_t i = 0; i < rank; ++i) out.dims.push_back(added[i] ? 1 : data.dims[from++]);
  } else {
    std::vector<bool> removed(data.dims.size(), false);
    for (long long a : axes) {
      const std::size_t i = axis_index(m, node, a, data.dims.size());
      if (data.dims[i] != 1) m.fail(node, "squeezes axis " + std::to_string(a) + ", which is not of size 1");
      removed[i] = true;
    }
    out.dims.clear();
    for (std::size_t i = 0; i < data.dims.size(); ++i) {
      if (axes.empty() ? data.dims[i] != 1 : !removed[i]) out.dims.push_back(data.dims[i]);
    }
  }
  return out;
}

Constant cast(Importer& m, const onnx::NodeProto& node) {
  const Constant& data = m.value(node, 0);
  const long long to = int_attr(node, "to", 0);
  Constant out;
  out.dims = data.dims;
  out.symbols = data.symbols;
  const std::size_t n = element_count(data);
  // A value that stands for the batch size keeps its symbol; its placeholder is not converted.
  if (to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE) {
    out.is_float = true;
    for (std::size_t i = 0; i < n; ++i)
      out.floats.push_back(symbol(data, i) == Constant::kKnown ? static_cast<float>(value(data, i)) : 0.0f);
  } else if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32) {
    const long long lo = to == onnx::TensorProto::INT32 ? std::numeric_limits<std::int32_t>::min()
                                                        : std::numeric_limits<long long>::min();
    const long long hi = to == onnx::TensorProto::INT32 ? std::numeric_limits<std::int32_t>::max()
                                                        : std::numeric_limits<long long>::max();
    for (std::size_t i = 0; i < n; ++i) {
      long long v = 0;
      if (symbol(data, i) != Constant::kKnown) {
        v = 0;
      } else if (!is_float(data)) {
        v = data.ints[i];
        if (v < lo || v > hi) m.fail(node, "casts " + std::to_string(v) + " to INT32, out of its range");
      } else {
        const double f = data.floats[i];
        // Toward zero, as C and ONNX Runtime; only where the result is in range.
        if (!(f > static_cast<double>(lo) - 1.0 && f < static_cast<double>(hi) + 1.0) || !(std::fabs(f) < 9.2e18))
          m.fail(node, "casts " + value_string(f) + " to an integer, out of its range");
        v = static_cast<long long>(f);
      }
      out.ints.push_back(v);
    }
  } else {
    m.fail(node, "casts to data type " + std::to_string(to) + "; the folded shape arithmetic is float or integer");
  }
  return out;
}

// Slice (opset 10 on: starts, ends, axes, steps as inputs; before: attributes, step 1).
Constant slice(Importer& m, const onnx::NodeProto& node) {
  const Constant& data = m.value(node, 0);
  std::vector<long long> starts, ends, axes, steps;
  if (m.opset() >= 10) {
    starts = known_ints(m, node, m.value(node, 1), "starts");
    ends = known_ints(m, node, m.value(node, 2), "ends");
    if (const Constant* a = optional_input(m, node, 3)) axes = known_ints(m, node, *a, "axes");
    if (const Constant* s = optional_input(m, node, 4)) steps = known_ints(m, node, *s, "steps");
  } else {
    starts = ints_attr(node, "starts");
    ends = ints_attr(node, "ends");
    axes = ints_attr(node, "axes");
  }
  const std::size_t rank = data.dims.size();
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<long long>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    m.fail(node, "starts, ends, axes and steps differ in length");
  // Per axis: the first index, the step and the count, as ONNX clamps them.
  std::vector<long long> first(rank, 0), step(rank, 1), dims = data.dims;
  std::vector<bool> seen(rank, false);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::size_t a = axis_index(m, node, axes[k], rank);
    if (seen[a]) m.fail(node, "axis " + std::to_string(axes[k]) + " is sliced twice");
    seen[a] = true;
    const long long d = data.dims[a], s = steps[k];
    if (s == 0) m.fail(node, "a step of 0");
    // ONNX: a negative start or end counts from the end (v + d, which cannot overflow for d >= 0),
    // then both are clamped: to [0, d] going forward, start to [0, d - 1] and end to [-1, d - 1]
    // going backward. The count in unsigned arithmetic: |step| may be 2^63.
    auto norm = [&](long long v) { return v < 0 ? v + d : v; };
    long long b = norm(starts[k]), e = norm(ends[k]);
    const unsigned long long magnitude =
        s > 0 ? static_cast<unsigned long long>(s) : 0ULL - static_cast<unsigned long long>(s);
    if (s > 0) {
      b = std::clamp(b, 0LL, d), e = std::clamp(e, 0LL, d);
      dims[a] = e > b ? static_cast<long long>(static_cast<unsigned long long>(e - b - 1) / magnitude + 1) : 0;
    } else {
      b = std::clamp(b, 0LL, d - 1), e = std::clamp(e, -1LL, d - 1);
      dims[a] = b > e ? static_cast<long long>(static_cast<unsigned long long>(b - e - 1) / magnitude + 1) : 0;
    }
    first[a] = b, step[a] = s;
  }
  Constant out = shaped_like(m, node, data, dims);
  std::vector<long long> at(rank, 0);
  for (std::size_t to = 0; to < element_count(out); ++to) {
    std::size_t from = 0;
    for (std::size_t a = 0; a < rank; ++a)
      from = from * static_cast<std::size_t>(data.dims[a]) + static_cast<std::size_t>(first[a] + at[a] * step[a]);
    copy_element(data, from, out, to);
    for (std::size_t a = rank; a-- > 0;) {  // the next output position, last axis fastest
      if (++at[a] < dims[a]) break;
      at[a] = 0;
    }
  }
  return out;
}

Constant concat(Importer& m, const onnx::NodeProto& node) {
  std::vector<const Constant*> parts;
  for (int i = 0; i < node.input_size(); ++i) parts.push_back(&m.value(node, i));
  if (parts.empty()) m.fail(node, "has no inputs");
  const Constant& first = *parts[0];
  if (first.dims.empty()) m.fail(node, "joins scalars");
  const std::size_t axis = axis_index(m, node, int_attr(node, "axis", 0), first.dims.size());
  std::vector<long long> dims = first.dims;
  dims[axis] = 0;
  bool symbols = false, floats = false;
  for (const Constant* p : parts) {
    std::vector<long long> a = p->dims, b = first.dims;
    if (a.size() != b.size()) m.fail(node, "joins tensors of different ranks");
    a[axis] = b[axis] = 0;
    if (a != b) m.fail(node, "joins tensors whose shapes differ off the axis");
    dims[axis] += p->dims[axis];
    symbols = symbols || !p->symbols.empty();
    floats = floats || is_float(*p);
  }
  if (floats && !std::all_of(parts.begin(), parts.end(), [](const Constant* p) { return is_float(*p); }))
    m.fail(node, "joins float and integer tensors");
  Constant out = shaped_like(m, node, first, dims);
  if (symbols) out.symbols.assign(element_count(out), Constant::kKnown);
  std::size_t outer = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(dims[i]);
  std::size_t to = 0;
  for (std::size_t o = 0; o < outer; ++o) {
    for (const Constant* p : parts) {
      const std::size_t block = element_count(*p) / outer;
      for (std::size_t i = 0; i < block; ++i) copy_element(*p, o * block + i, out, to++);
    }
  }
  return out;
}

// Add, Sub, Mul, Div with ONNX's (numpy's) broadcasting; integer division truncates toward zero,
// as ONNX Runtime's does. The batch symbol survives x * 1, x / 1, x + 0 and x - 0; any other
// arithmetic on it gives kDependsOnBatch.
Constant arithmetic(Importer& m, const onnx::NodeProto& node) {
  if (node.input_size() != 2) m.fail(node, "needs two inputs");
  const Constant& a = m.value(node, 0);
  const Constant& b = m.value(node, 1);
  if (is_float(a) != is_float(b)) m.fail(node, "mixes float and integer operands");
  const std::string_view op = node.op_type();
  const std::size_t rank = std::max(a.dims.size(), b.dims.size());
  auto dim = [&](const Constant& c, std::size_t i) {  // aligned to the right, 1 where absent
    const std::size_t off = rank - c.dims.size();
    return i < off ? 1LL : c.dims[i - off];
  };
  std::vector<long long> dims(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const long long x = dim(a, i), y = dim(b, i);
    if (x != y && x != 1 && y != 1)
      m.fail(node, "operands of shapes " + shape_string(a.dims) + " and " + shape_string(b.dims) + " do not broadcast");
    dims[i] = x == 1 ? y : x;
  }
  Constant out = shaped_like(m, node, a, dims);
  if (!a.symbols.empty() || !b.symbols.empty()) out.symbols.assign(element_count(out), Constant::kKnown);
  std::vector<long long> at(rank, 0);
  for (std::size_t to = 0; to < element_count(out); ++to) {
    auto index = [&](const Constant& c) {
      std::size_t i = 0;
      for (std::size_t k = rank - c.dims.size(); k < rank; ++k)
        i = i * static_cast<std::size_t>(dim(c, k)) + static_cast<std::size_t>(dim(c, k) == 1 ? 0 : at[k]);
      return i;
    };
    const std::size_t ia = index(a), ib = index(b);
    const unsigned char sa = symbol(a, ia), sb = symbol(b, ib);
    if (sa != Constant::kKnown || sb != Constant::kKnown) {
      // A placeholder for N is not a number: only the symbol (below) is computed.
    } else if (out.is_float) {
      const float x = a.floats[ia], y = b.floats[ib];
      out.floats[to] = op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y;
    } else {
      const long long x = a.ints[ia], y = b.ints[ib];
      long long r = 0;
      const bool overflow = op == "Add"   ? __builtin_add_overflow(x, y, &r)
                            : op == "Sub" ? __builtin_sub_overflow(x, y, &r)
                            : op == "Mul" ? __builtin_mul_overflow(x, y, &r)
                                          : false;
      if (op == "Div") {
        if (y == 0) m.fail(node, "divides by zero");
        if (x == std::numeric_limits<long long>::min() && y == -1) m.fail(node, "overflows 64-bit integers");
        r = x / y;
      }
      if (overflow) m.fail(node, "overflows 64-bit integers");
      out.ints[to] = r;
    }
    if (!out.symbols.empty()) {
      const bool identity = (op == "Mul" || op == "Div") ? value(b, ib) == 1.0 && sb == Constant::kKnown
                                                         : value(b, ib) == 0.0 && sb == Constant::kKnown;
      const bool identity_left = op == "Mul" ? value(a, ia) == 1.0 : op == "Add" && value(a, ia) == 0.0;
      if (sa == Constant::kKnown && sb == Constant::kKnown)
        out.symbols[to] = Constant::kKnown;
      else if (sa == Constant::kBatch && sb == Constant::kKnown && identity)
        out.symbols[to] = Constant::kBatch;
      else if (sb == Constant::kBatch && sa == Constant::kKnown && identity_left)
        out.symbols[to] = Constant::kBatch;
      else
        out.symbols[to] = Constant::kDependsOnBatch;
    }
    for (std::size_t k = rank; k-- > 0;) {
      if (++at[k] < dims[k]) break;
      at[k] = 0;
    }
  }
  return out;
}

// Floor, Ceil, Sqrt, Neg: one float value from each.
Constant unary(Importer& m, const onnx::NodeProto& node) {
  Constant out = m.value(node, 0);
  const std::string_view op = node.op_type();
  if (!is_float(out)) {
    if (op != "Neg") m.fail(node, "reads an integer tensor; " + node.op_type() + " is defined on floats");
    for (std::size_t i = 0; i < out.ints.size(); ++i) {
      long long& v = out.ints[i];
      if (symbol(out, i) != Constant::kKnown) continue;  // -N depends on N: the symbol below says so
      if (v == std::numeric_limits<long long>::min()) m.fail(node, "overflows 64-bit integers");
      v = -v;
    }
  } else {
    for (float& v : out.floats)
      v = op == "Floor" ? std::floor(v) : op == "Ceil" ? std::ceil(v) : op == "Sqrt" ? std::sqrt(v) : -v;
  }
  for (unsigned char& s : out.symbols)
    if (s == Constant::kBatch) s = Constant::kDependsOnBatch;
  return out;
}

// Reshape of a folded value (the shape known: 0 copies a dimension, one -1 takes the rest).
Constant reshape_constant(Importer& m, const onnx::NodeProto& node) {
  Constant out = m.value(node, 0);
  const std::vector<long long> shape = known_ints(m, node, m.value(node, 1), "the shape");
  const std::size_t n = element_count(out);
  std::vector<long long> dims;
  long long known = 1;
  int free = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    long long d = shape[i];
    if (d == 0 && int_attr(node, "allowzero", 0) == 0) {
      if (i >= out.dims.size()) m.fail(node, "copies a dimension the data does not have");
      d = out.dims[i];
    }
    if (d == -1) {
      if (free >= 0) m.fail(node, "has two -1 dimensions");
      free = static_cast<int>(i);
      d = 1;
    } else if (d < 0) {
      m.fail(node, "has the negative dimension " + std::to_string(d));
    }
    dims.push_back(d);
    if (d != 0 && known > static_cast<long long>(kMaxFoldedValues) / d) m.fail(node, "the shape is too large");
    known *= d;
  }
  if (free >= 0 && known > 0) dims[static_cast<std::size_t>(free)] = static_cast<long long>(n) / known;
  if (count_of(m, node, dims) != n) m.fail(node, "reshapes " + std::to_string(n) + " values to " + shape_string(dims));
  out.dims = std::move(dims);
  return out;
}

// ConstantOfShape: a tensor of the known shape, every value the attribute's (default float 0).
Constant constant_of_shape(Importer& m, const onnx::NodeProto& node) {
  const std::vector<long long> dims = known_ints(m, node, m.value(node, 0), "the shape");
  Constant fill;
  fill.is_float = true;
  fill.floats = {0.0f};
  if (const onnx::AttributeProto* v = attribute(node, "value")) {
    if (!v->has_t()) m.fail(node, "the value must be a tensor");
    fill = m.read_tensor(v->t(), "value of node '" + node.output(0) + "'");
    if (element_count(fill) != 1) m.fail(node, "the value must hold one element");
  }
  Constant out = shaped_like(m, node, fill, dims);
  for (std::size_t i = 0; i < element_count(out); ++i) copy_element(fill, 0, out, i);
  return out;
}

struct Folder {
  std::string_view type;
  Constant (*fold)(Importer&, const onnx::NodeProto&);
};
const std::vector<Folder>& folders() {
  using N = const onnx::NodeProto&;
  static const std::vector<Folder> table = {
      {"Shape", [](Importer& m, N n) { return shape(m, n); }},
      {"Gather", [](Importer& m, N n) { return gather(m, n); }},
      {"Unsqueeze", [](Importer& m, N n) { return reshaped_axes(m, n, true); }},
      {"Squeeze", [](Importer& m, N n) { return reshaped_axes(m, n, false); }},
      {"Cast", [](Importer& m, N n) { return cast(m, n); }},
      {"Slice", [](Importer& m, N n) { return slice(m, n); }},
      {"Concat", [](Importer& m, N n) { return concat(m, n); }},
      {"Add", [](Importer& m, N n) { return arithmetic(m, n); }},
      {"Sub", [](Importer& m, N n) { return arithmetic(m, n); }},
      {"Mul", [](Importer& m, N n) { return arithmetic(m, n); }},
      {"Div", [](Importer& m, N n) { return arithmetic(m, n); }},
      {"Floor", [](Importer& m, N n) { return unary(m, n); }},
      {"Ceil", [](Importer& m, N n) { return unary(m, n); }},
      {"Sqrt", [](Importer& m, N n) { return unary(m, n); }},
      {"Neg", [](Importer& m, N n) { return unary(m, n); }},
      {"Reshape", [](Importer& m, N n) { return reshape_constant(m, n); }},
      {"ConstantOfShape", [](Importer& m, N n) { return constant_of_shape(m, n); }},
  };
  return table;
}

}  // namespace

std::vector<std::string> folded_op_types() {
  std::vector<std::string> types;
  for (const Folder& f : folders()) types.emplace_back(f.type);
  return types;
}

bool fold(Importer& m, const onnx::NodeProto& node) {
  const auto f =
      std::find_if(folders().begin(), folders().end(), [&](const Folder& r) { return r.type == node.op_type(); });
  if (f == folders().end()) return false;
  // Shape reads a computed tensor's (known) shape; every other folded op needs all its inputs known.
  if (node.op_type() != "Shape") {
    for (const std::string& name : node.input()) {
      if (!name.empty() && m.find_constant(name) == nullptr) return false;
    }
  }
  m.no_extra_outputs(node, 1);
  Constant out = f->fold(m, node);
  count_of(m, node, out.dims);  // every folded output within the per-tensor limit, copies included
  m.define_constant(node, std::move(out));
  return true;
}

}  // namespace infer::onnx_import
