defmodule ExZarr.Codecs.CategorizeTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.Categorize
  alias ExZarr.DType.Strings
  alias ExZarr.Test.Python

  doctest Categorize

  defp init(config, chars, n \\ 4),
    do: Categorize.init(config, %{spec({n}, {:fixed_utf32, chars}) | fill_value: ""})

  defp pack(strings, chars) do
    {:ok, bin} = Strings.pack(strings, {:fixed_utf32, chars})
    bin
  end

  defp strings(bin, chars) do
    {:ok, strings} = Strings.unpack(bin, {:fixed_utf32, chars})
    strings
  end

  test "each string as its label's number from 1, 0 for others; decoded back, others as \"\"" do
    {:ok, s} = init(%{"labels" => ["male", "female"], "dtype" => "<U10"}, 10, 5)
    data = pack(~w(male female female male unexpected), 10)
    {encoded, {:ok, decoded}} = round_trip(Categorize, s, data)
    assert encoded == <<1, 2, 2, 1, 0>>
    assert strings(decoded, 10) == ["male", "female", "female", "male", ""]
    assert Categorize.resolve_spec(spec({5}, {:fixed_utf32, 10}), s).dtype == :uint8

    assert Categorize.configuration(s) == %{
             "labels" => ["male", "female"],
             "dtype" => "<U10",
             "astype" => "|u1"
           }
  end

  test "wider and float astypes, stored little-endian" do
    {:ok, s} = init(%{"labels" => ["é", "ß"], "dtype" => "<U1", "astype" => "<i8"}, 1, 2)
    assert Categorize.encode(pack(["ß", "é"], 1), s) == {:ok, <<2::64-little, 1::64-little>>}

    {:ok, s} = init(%{"labels" => ["a"], "dtype" => ">U1", "astype" => "<f4"}, 1, 2)
    assert Categorize.encode(pack(["a", "b"], 1), s) == {:ok, <<1.0::float-32-little, 0::32>>}
  end

  test "as numcodecs with numpy 2: long labels, repeated labels, rounding and overflow" do
    # A label longer than the strings matches none; decoded, it is cut to their width.
    {:ok, s} = init(%{"labels" => ["abc", "ab"], "dtype" => "<U2"}, 2, 2)
    assert Categorize.encode(pack(["ab", "a"], 2), s) == {:ok, <<2, 0>>}
    assert {:ok, back} = Categorize.decode(<<1, 0>>, s)
    assert strings(back, 2) == ["ab", ""]

    # The last of equal labels wins on encoding; each number decodes to its own label.
    {:ok, s} = init(%{"labels" => ["x", "y", "x"], "dtype" => "<U1"}, 1, 3)
    assert Categorize.encode(pack(["x", "y", "z"], 1), s) == {:ok, <<3, 2, 0>>}

    # float16 holds integers exactly up to 2048: 2049 rounds to 2048, and the last label whose
    # number rounds to a stored one decodes from it.
    labels = Enum.map(0..2049, &Integer.to_string/1)
    {:ok, s} = init(%{"labels" => labels, "dtype" => "<U4", "astype" => "<f2"}, 4, 3)
    {:ok, enc} = Categorize.encode(pack(["2047", "2048", "2049"], 4), s)
    assert enc == <<2048.0::float-16-little, 2048.0::float-16-little, 2050.0::float-16-little>>
    assert {:ok, back} = Categorize.decode(enc, s)
    assert strings(back, 4) == ["2048", "2048", "2049"]

    # 256 labels do not fit |u1: numpy 2 refuses to encode, decoding still works.
    {:ok, s} = init(%{"labels" => List.duplicate("x", 300), "dtype" => "<U1"}, 1, 2)

    assert Categorize.encode(pack(["x", "y"], 1), s) ==
             {:error, {:categorize, {:too_many_labels, 300, :uint8}}}

    assert {:ok, back} = Categorize.decode(<<255, 0>>, s)
    assert strings(back, 1) == ["x", ""]
  end

  test "bad configurations and sizes are errors" do
    assert {:error, {:missing_key, "labels"}} = init(%{"dtype" => "<U2"}, 2)
    assert {:error, {:missing_key, "dtype"}} = init(%{"labels" => []}, 2)

    for bad <- [%{"labels" => "a"}, %{"labels" => [1]}, %{"labels" => [<<0xFF>>]}] do
      assert {:error, {:invalid_value, "labels", _, _}} = init(Map.put(bad, "dtype", "<U2"), 2)
    end

    for dtype <- ["<U3", "|S2", "|O", 2] do
      assert {:error, {:invalid_value, "dtype", ^dtype, _}} =
               init(%{"labels" => [], "dtype" => dtype}, 2)
    end

    for astype <- ["|b1", "<c8", "|O"] do
      assert {:error, {:invalid_value, "astype", ^astype, _}} =
               init(%{"labels" => [], "dtype" => "<U2", "astype" => astype}, 2)
    end

    assert {:error, {:unsupported_dtype, :int32}} =
             Categorize.init(%{"labels" => [], "dtype" => "<U2"}, spec({4}, :int32))

    {:ok, s} = init(%{"labels" => ["a"], "dtype" => "<U1"}, 1, 2)
    assert {:error, {:categorize, {:size, 3, 2}}} = Categorize.decode(<<1, 2, 3>>, s)
    assert {:error, {:categorize, {:size, 4, 8}}} = Categorize.encode(<<0, 0, 0, 0>>, s)

    assert {:error, {:invalid_codec_config, "categorize", {:unknown_key, "label"}}} =
             ExZarr.create(
               shape: {4},
               dtype: {:fixed_utf32, 1},
               zarr_format: 2,
               filters: [%{id: "categorize", label: [], dtype: "<U1"}]
             )
  end

  @script """
  import json, os, sys, warnings
  import numpy as np, numcodecs, zarr
  warnings.simplefilter("ignore")
  d = sys.argv[1]
  a = zarr.open_array(os.path.join(d, "ex"), mode="r")
  print(json.dumps([str(x) for x in a[:].ravel()]))
  z = zarr.create_array(os.path.join(d, "py"), shape=(3, 5), chunks=(2, 2), dtype="<U6",
                        zarr_format=2, compressors=numcodecs.Zstd(level=1),
                        filters=[numcodecs.Categorize(["red", "green", "blue"], dtype="<U6")])
  z[:] = np.array([["red", "green", "blue", "nope", "red"]] * 3)
  """

  @tag :tmp_dir
  test "zarr-python reads what ExZarr wrote and ExZarr reads what zarr-python wrote",
       %{tmp_dir: dir} do
    words = ~w(red green blue green néant red)
    filter = %{id: "categorize", labels: ["red", "green", "blue", "néant"], dtype: "<U5"}

    {:ok, a} =
      ExZarr.create(
        path: Path.join(dir, "ex"),
        shape: {2, 3},
        chunks: {2, 2},
        dtype: {:fixed_utf32, 5},
        zarr_format: 2,
        compressor: %{id: "zstd", level: 1},
        filters: [filter]
      )

    :ok = ExZarr.Array.set_slice(a, pack(words, 5))
    [line | _] = String.split(Python.run!(@script, [dir]), "\n")
    assert :jiffy.decode(line) == words

    {:ok, py} = ExZarr.open(path: Path.join(dir, "py"))
    {:ok, data} = ExZarr.Array.get_slice(py)

    assert strings(data, 6) ==
             List.flatten(List.duplicate(["red", "green", "blue", "", "red"], 3))
  end
end
