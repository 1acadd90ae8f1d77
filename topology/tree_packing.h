#pragma once

#include <vector>

#include "topology/link_matrix.h"
#include "topology/spanning_tree.h"

namespace horde {

// Trees and rates for allreduce (reduce up, broadcast down on each tree, the data split
// across trees by rate), after Blink (MLSys 2020). Every tree edge {u,v} carries the
// tree's rate in both directions, so the capacity of {u,v} is min(Link(u,v), Link(v,u));
// a rank's NIC carries degree_in_tree x rate in each direction.
//
// How: Garg–Könemann's multiplicative weights generate candidate trees (repeatedly a
// minimum spanning tree under exponential lengths of the edges, plus each NIC-limited
// end's length, since a tree's NIC cost at v is deg_v x its length), weighted by what
// each carried. The heaviest few candidates get exact rates from a small linear program
// (topology/packing_lp.h); the tree of least rate is dropped and the rates solved again until
// at most `max_trees` remain (rates re-solved for the kept trees, rather than the
// fractional packing scaled down, which would lose what the dropped trees carried).
// Then column generation within `max_trees`: the minimum spanning tree under the
// program's prices joins if it raises the total, displacing the tree that costs least.
// That optimum is local: with few trees allowed, the best set of them may differ by more
// than one tree. Each tree is rooted at its center (least Height), and the trees come
// in descending rate.
//
// Deterministic: the same matrix gives bit-identical trees on every rank (ties go to
// the lower rank or the earlier candidate). Returns {} when the links do not connect all
// ranks, and for one rank (nothing to send).
std::vector<SpanningTree> PackSpanningTrees(const LinkMatrix& links, int max_trees = 4);

}  // namespace horde
