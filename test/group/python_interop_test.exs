defmodule ExZarr.Group.PythonInteropTest do
  @moduledoc """
  Hierarchies against zarr-python 3.1: trees with attributes, consolidated metadata in both
  formats, resized and appended arrays and an OME-Zarr-shaped multiscale image, written by one
  side and read by the other, compared exactly.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Group}
  alias ExZarr.Test.Python

  @moduletag :tmp_dir

  defp i32(list), do: for(x <- list, into: <<>>, do: <<x::signed-32-little>>)
  defp from_i32(bin), do: for(<<x::signed-32-little <- bin>>, do: x)
  defp from_f64(bin), do: for(<<x::float-64-little <- bin>>, do: x)

  # Runs a script body that fills the dict `out` (json, sys, numpy as np and zarr imported);
  # returns `out` decoded.
  defp python_json!(body, args) do
    header = "import json, sys, warnings\nimport numpy as np, zarr\n"

    code =
      header <>
        "warnings.simplefilter('ignore')\nout = {}\n" <> body <> "print(json.dumps(out))\n"

    out = Python.run!(code, args)
    out |> String.split("\n", trim: true) |> List.last() |> :jiffy.decode([:return_maps])
  end

  @python_tree """
  for fmt in (2, 3):
      for consolidated in (False, True):
          path = f"{sys.argv[1]}/py{fmt}{'c' if consolidated else ''}.zarr"
          root = zarr.open_group(path, mode="w", zarr_format=fmt)
          root.attrs.update({"title": "py", "nested": {"a": [1, 2.5, None, True, "s"]}})
          t = root.create_array("temps", shape=(5, 7), chunks=(2, 3), dtype="float64")
          t[:] = np.arange(35).reshape(5, 7) * 0.5
          t.attrs["units"] = "K"
          st = root.create_group("obs/station")
          st.attrs["id"] = 7
          c = st.create_array("counts", shape=(10,), chunks=(4,), dtype="int32", fill_value=-1)
          c[:] = np.arange(10)
          c.resize((5,))
          c.append(np.array([100, 101, 102], dtype="int32"))
          w = root.create_array("wide", shape=(2, 3), chunks=(2, 2), dtype="int32")
          w[:] = np.arange(6).reshape(2, 3)
          w.append(np.array([[6], [7]], dtype="int32"), axis=1)
          root.create_group("empty")
          if consolidated:
              zarr.consolidate_metadata(path)
          out[path] = {
              "tree": repr(root.tree()),
              "counts": c[:].tolist(),
              "wide": w[:].tolist(),
          }
  """

  test "ExZarr reads zarr-python trees with attributes, consolidated or not", %{tmp_dir: dir} do
    expected = python_json!(@python_tree, [dir])
    assert map_size(expected) == 4

    for {path, py} <- expected, use_consolidated <- [nil, false] do
      {:ok, root} = ExZarr.open_group(path: path, use_consolidated: use_consolidated)
      consolidated? = String.ends_with?(path, "c.zarr") and use_consolidated == nil
      assert root.metadata.consolidated != nil == consolidated?, path

      assert Group.tree(root) == {:ok, py["tree"]}, path

      assert Group.attributes(root) == %{
               "title" => "py",
               "nested" => %{"a" => [1, 2.5, nil, true, "s"]}
             }

      assert Array.attributes(root["temps"]) == %{"units" => "K"}
      assert Group.attributes(root["obs/station"]) == %{"id" => 7}
      assert from_f64(Array.get_slice!(root["temps"])) == Enum.map(0..34, &(&1 * 0.5))

      counts = root["obs"]["station"]["counts"]
      assert counts.metadata.shape == {8}
      assert from_i32(Array.get_slice!(counts)) == py["counts"]
      assert from_i32(Array.get_slice!(root["wide"])) == List.flatten(py["wide"])
    end
  end

  @python_read """
  for path in sys.argv[1:]:
    for use in (True, False):
      root = zarr.open_group(path, mode="r", use_consolidated=use)
      cm = root.metadata.consolidated_metadata
      nodes = {}
      for name, node in root.members(max_depth=None):
          entry = {"attrs": dict(node.attrs), "kind": type(node).__name__}
          if isinstance(node, zarr.Array):
              entry["shape"] = list(node.shape)
              entry["data"] = node[...].tolist()
          nodes[name] = entry
      out[f"{path} {str(use).lower()}"] = {
          "consolidated": sorted(cm.flattened_metadata) if cm is not None else None,
          "attrs": dict(root.attrs),
          "tree": repr(root.tree()),
          "nodes": nodes,
      }
  """

  test "zarr-python reads ExZarr trees, through ExZarr's consolidated metadata and without",
       %{tmp_dir: dir} do
    paths =
      for format <- [2, 3] do
        path = Path.join(dir, "ex#{format}.zarr")

        {:ok, root} =
          ExZarr.create_group(path: path, zarr_format: format, attributes: %{"t" => 1})

        {:ok, temps} =
          Group.create_array(root, "temps", shape: {3, 4}, chunks: {2, 2}, dtype: :int32)

        :ok = Array.set_slice(temps, i32(Enum.to_list(0..11)))
        {:ok, _} = Array.update_attributes(temps, %{"units" => "K", "valid" => [0, nil]})

        {:ok, series} =
          Group.create_array(root, "obs/series",
            shape: {10},
            chunks: {4},
            dtype: :int32,
            fill_value: -1
          )

        :ok = Array.set_slice(series, i32(Enum.to_list(0..9)))
        {:ok, series} = Array.resize(series, {5})
        {:ok, _series} = Array.resize(series, {9})

        {:ok, wide} =
          Group.create_array(root, "obs/wide", shape: {2, 2}, chunks: {2, 2}, dtype: :int32)

        :ok = Array.set_slice(wide, i32([1, 2, 3, 4]))
        {:ok, wide} = Array.append(wide, i32([5, 6]), 1)
        {:ok, _wide} = Array.append(wide, i32([7, 8, 9]), 0)

        {:ok, obs} = Group.open(root, "obs")
        {:ok, _} = Group.set_attributes(obs, %{"site" => "x"})
        {:ok, _} = Group.create_group(root, "empty/inner")
        {:ok, _} = ExZarr.consolidate(path: path)
        {:ok, tree} = ExZarr.tree(path: path)
        {path, tree}
      end

    result = python_json!(@python_read, Enum.map(paths, &elem(&1, 0)))

    for {path, tree} <- paths, use <- [true, false] do
      py = result["#{path} #{use}"]
      assert py["tree"] == tree
      assert py["attrs"] == %{"t" => 1}

      assert py["consolidated"] ==
               if(use,
                 do: ["empty", "empty/inner", "obs", "obs/series", "obs/wide", "temps"],
                 else: :null
               )

      nodes = py["nodes"]
      assert nodes["obs"]["attrs"] == %{"site" => "x"}
      assert nodes["temps"]["attrs"] == %{"units" => "K", "valid" => [0, :null]}
      assert nodes["temps"]["data"] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
      assert nodes["obs/series"]["data"] == [0, 1, 2, 3, 4, -1, -1, -1, -1]
      assert nodes["obs/wide"]["data"] == [[1, 2, 5], [3, 4, 6], [7, 8, 9]]
      assert nodes["empty/inner"]["kind"] == "Group"
    end
  end

  @python_grow """
  for path in sys.argv[1:]:
      a = zarr.open_array(path, mode="r+")
      a.resize((a.shape[0] + 2, a.shape[1]))
      a.append(np.full((1, a.shape[1]), 9, dtype=a.dtype))
      out[path] = a[...].tolist()
  """

  test "arrays resized by ExZarr keep growing in zarr-python and back", %{tmp_dir: dir} do
    paths =
      for format <- [2, 3] do
        path = Path.join(dir, "grow#{format}.zarr")

        {:ok, a} =
          ExZarr.create(
            path: path,
            zarr_format: format,
            shape: {4, 3},
            chunks: {3, 2},
            dtype: :int32,
            fill_value: -7
          )

        :ok = Array.set_slice(a, i32(Enum.to_list(1..12)))
        {:ok, _} = Array.resize(a, {2, 2})
        path
      end

    result = python_json!(@python_grow, paths)

    for path <- paths do
      expected = [[1, 2], [4, 5], [-7, -7], [-7, -7], [9, 9]]
      assert result[path] == expected
      {:ok, a} = ExZarr.open(path: path)
      assert a.metadata.shape == {5, 2}
      assert from_i32(Array.get_slice!(a)) == List.flatten(expected)
      {:ok, a} = Array.append(a, i32([10, 11]))
      assert from_i32(Array.get_slice!(a, start: {5, 0}, stop: {6, 2})) == [10, 11]
    end
  end

  # The moduledoc's multiscale image, in the OME-Zarr 0.4 layout (Zarr v2, `multiscales`
  # attribute) and the 0.5 one (Zarr v3, under an `ome` attribute).
  defp multiscale(path, format) do
    axes = [
      %{"name" => "c", "type" => "channel"},
      %{"name" => "y", "type" => "space", "unit" => "micrometer"},
      %{"name" => "x", "type" => "space", "unit" => "micrometer"}
    ]

    levels = [{"0", {2, 64, 48}, 0.5}, {"1", {2, 32, 24}, 1.0}, {"2", {2, 16, 12}, 2.0}]

    datasets =
      for {level, _shape, scale} <- levels do
        %{
          "path" => level,
          "coordinateTransformations" => [%{"type" => "scale", "scale" => [1.0, scale, scale]}]
        }
      end

    multiscales = [%{"name" => "cells", "axes" => axes, "datasets" => datasets}]

    attributes =
      case format do
        2 -> %{"multiscales" => Enum.map(multiscales, &Map.put(&1, "version", "0.4"))}
        3 -> %{"ome" => %{"version" => "0.5", "multiscales" => multiscales}}
      end

    {:ok, image} = ExZarr.create_group(path: path, zarr_format: format, attributes: attributes)

    for {{level, shape, _scale}, k} <- Enum.with_index(levels) do
      {:ok, array} =
        Group.create_array(image, level,
          shape: shape,
          chunks: {1, 16, 16},
          dtype: :uint16,
          dimension_names: if(format == 3, do: ["c", "y", "x"])
        )

      {c, h, w} = shape

      data =
        for ch <- 0..(c - 1),
            y <- 0..(h - 1),
            x <- 0..(w - 1),
            into: <<>>,
            do: <<ch * 1000 + y * w + x + k::16-little>>

      :ok = Array.set_slice(array, data)
    end

    {:ok, _} = ExZarr.consolidate(path: path)
    :ok
  end

  @python_ome """
  for path in sys.argv[1:]:
      root = zarr.open_group(path, mode="r")
      attrs = dict(root.attrs)
      ms = attrs["ome"]["multiscales"] if "ome" in attrs else attrs["multiscales"]
      levels = []
      for k, ds in enumerate(ms[0]["datasets"]):
          a = root[ds["path"]]
          c, h, w = a.shape
          ch, y, x = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
          ok = bool((a[...] == (ch * 1000 + y * w + x + k).astype("uint16")).all())
          levels.append({"path": ds["path"], "shape": list(a.shape), "dtype": str(a.dtype),
                         "scale": ds["coordinateTransformations"][0]["scale"], "ok": ok})
      out[path] = {"axes": [a["name"] for a in ms[0]["axes"]], "levels": levels}
  """

  test "an OME-Zarr-shaped multiscale image built by ExZarr is read by zarr-python",
       %{tmp_dir: dir} do
    paths =
      for format <- [2, 3] do
        path = Path.join(dir, "image#{format}.ome.zarr")
        :ok = multiscale(path, format)
        path
      end

    result = python_json!(@python_ome, paths)

    for path <- paths do
      assert result[path]["axes"] == ["c", "y", "x"]

      assert result[path]["levels"] == [
               %{
                 "path" => "0",
                 "shape" => [2, 64, 48],
                 "dtype" => "uint16",
                 "scale" => [1.0, 0.5, 0.5],
                 "ok" => true
               },
               %{
                 "path" => "1",
                 "shape" => [2, 32, 24],
                 "dtype" => "uint16",
                 "scale" => [1.0, 1.0, 1.0],
                 "ok" => true
               },
               %{
                 "path" => "2",
                 "shape" => [2, 16, 12],
                 "dtype" => "uint16",
                 "scale" => [1.0, 2.0, 2.0],
                 "ok" => true
               }
             ]

      {:ok, image} = ExZarr.open(path: path)

      assert Group.tree(image) ==
               {:ok,
                "/\n├── 0 (2, 64, 48) uint16\n├── 1 (2, 32, 24) uint16\n└── 2 (2, 16, 12) uint16\n"}
    end
  end
end
