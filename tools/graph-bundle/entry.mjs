// What the memory graph page takes from its libraries, as one global for a plain <script>.
import Graph from "graphology";
import circlepack from "graphology-layout/circlepack";
import forceAtlas2 from "graphology-layout-forceatlas2";
import FA2Layout from "graphology-layout-forceatlas2/worker";
import Sigma from "sigma";
import { EdgeArrowProgram, EdgeRectangleProgram, NodeCircleProgram } from "sigma/rendering";

window.GitmemGraphLibs = {
  Graph, Sigma, FA2Layout, forceAtlas2, circlepack, NodeCircleProgram, EdgeArrowProgram, EdgeRectangleProgram,
};
