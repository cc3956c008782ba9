defmodule ExZarr.BadInput.ApiMisuseTest do
  @moduledoc """
  Wrong-size data, out-of-bounds and malformed selections, chunk coordinates outside the grid and
  invalid creation options: each gives `{:error, _}` (never a raise) and leaves the stored files
  byte-identical; a failed create writes nothing.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Interop, Snapshot}

  @data for i <- 1..64, into: <<>>, do: <<i::32-signed-little>>

  setup do
    dir = Interop.tmp_dir!("api-misuse")
    on_exit(fn -> File.rm_rf!(dir) end)
    path = Path.join(dir, "a.zarr")

    assert {:ok, a} =
             ExZarr.create(
               shape: {8, 8},
               chunks: {4, 4},
               dtype: :int32,
               storage: :filesystem,
               path: path,
               zarr_format: 3,
               compressor: %{id: "gzip", level: 5},
               fill_value: 0
             )

    assert :ok = ExZarr.Array.set_slice(a, @data, start: {0, 0}, stop: {8, 8})
    %{dir: dir, array: a, before: Snapshot.take(dir)}
  end

  defp assert_unchanged(ctx) do
    assert Snapshot.diff(ctx.before, Snapshot.take(ctx.dir)) == []
    assert {:ok, bin} = ExZarr.Array.get_slice(ctx.array, start: {0, 0}, stop: {8, 8})
    assert bin == @data
  end

  @bad_selections [
    {"stop past the end", [start: {0, 0}, stop: {9, 8}]},
    {"start past the end", [start: {8, 9}, stop: {8, 9}]},
    {"negative start", [start: {-1, 0}, stop: {2, 2}]},
    {"start after stop", [start: {4, 4}, stop: {2, 2}]},
    {"rank too small", [start: {0}, stop: {4}]},
    {"rank too large", [start: {0, 0, 0}, stop: {1, 1, 1}]},
    {"non-integer bounds", [start: {0.0, 0}, stop: {2, 2}]}
  ]

  for {label, sel} <- @bad_selections do
    @tag sel: sel
    test "get_slice with #{label}", ctx do
      assert {:error, _} = ExZarr.Array.get_slice(ctx.array, ctx.sel)
      assert_unchanged(ctx)
    end

    @tag sel: sel
    test "set_slice with #{label}", ctx do
      assert {:error, _} = ExZarr.Array.set_slice(ctx.array, <<0::32>>, ctx.sel)
      assert_unchanged(ctx)
    end
  end

  for {label, size} <- [
        {"one element short", 15 * 4},
        {"one element long", 17 * 4},
        {"not a whole number of elements", 16 * 4 - 1},
        {"empty", 0}
      ] do
    @tag size: size
    test "set_slice with data #{label}", ctx do
      data = :binary.copy(<<9>>, ctx.size)
      assert {:error, _} = ExZarr.Array.set_slice(ctx.array, data, start: {2, 2}, stop: {6, 6})
      assert_unchanged(ctx)
    end
  end

  for coords <- [{2, 0}, {0, 2}, {-1, 0}, {0}, {0, 0, 0}] do
    @tag coords: coords
    test "read_chunk and write_chunk outside the grid: #{inspect(coords)}", ctx do
      assert {:error, reason} = ExZarr.Array.read_chunk(ctx.array, ctx.coords)
      assert reason != :not_found, "coordinates outside the grid are not a missing chunk"

      assert {:error, _} =
               ExZarr.Array.write_chunk(ctx.array, ctx.coords, :binary.copy(<<1>>, 64))

      assert_unchanged(ctx)
    end
  end

  for size <- [0, 60, 68, 63] do
    @tag size: size
    test "write_chunk with #{size} bytes for a 64-byte chunk", ctx do
      assert {:error, _} =
               ExZarr.Array.write_chunk(ctx.array, {1, 1}, :binary.copy(<<1>>, ctx.size))

      assert_unchanged(ctx)
    end
  end

  test "an empty selection reads as an empty binary", ctx do
    assert {:ok, ""} = ExZarr.Array.get_slice(ctx.array, start: {3, 3}, stop: {3, 8})
  end

  @bad_creates [
    {"zero chunk size", [chunks: {0, 4}]},
    {"negative shape", [shape: {-1, 8}]},
    {"chunk rank mismatch", [chunks: {4}]},
    {"unknown dtype", [dtype: :int33]},
    {"fill value out of int8 range", [dtype: :int8, fill_value: 300]},
    {"float fill for an integer dtype", [fill_value: 1.5]},
    {"bad order", [order: "X"]},
    {"zarr_format 4", [zarr_format: 4]},
    {"bad dimension_separator", [zarr_format: 2, dimension_separator: "/../"]},
    {"bad chunk key separator", [chunk_key_encoding: %{name: "default", separator: "-"}]},
    {"bad endian", [endian: :middle]},
    {"gzip level out of range", [compressor: %{id: "gzip", level: 42}]}
  ]

  for {label, opts} <- @bad_creates do
    @tag opts: opts
    test "create with #{label} writes nothing", ctx do
      path = Path.join(ctx.dir, "new.zarr")

      base = [
        shape: {8, 8},
        chunks: {4, 4},
        dtype: :int32,
        storage: :filesystem,
        path: path,
        zarr_format: 3,
        fill_value: 0
      ]

      assert {:error, _} = ExZarr.create(Keyword.merge(base, ctx.opts))
      assert_unchanged(ctx)
    end
  end

  test "create over an existing array is refused and leaves it untouched", ctx do
    assert {:error, _} =
             ExZarr.create(
               shape: {2},
               chunks: {2},
               dtype: :uint8,
               storage: :filesystem,
               path: Path.join(ctx.dir, "a.zarr"),
               zarr_format: 2
             )

    assert_unchanged(ctx)
  end

  test "create below an existing array is refused and leaves it untouched", ctx do
    assert {:error, _} =
             ExZarr.create(
               shape: {2},
               chunks: {2},
               dtype: :uint8,
               path: Path.join(ctx.dir, "a.zarr"),
               prefix: "inner/arr"
             )

    assert_unchanged(ctx)
  end

  test "create with overwrite: true and an unusable codec pipeline keeps the old array", ctx do
    # the metadata is valid, but string data cannot go through a transpose codec
    assert {:error, {:unsupported_codec, _}} =
             ExZarr.create(
               shape: {8, 8},
               chunks: {4, 4},
               dtype: :string,
               order: "F",
               path: Path.join(ctx.dir, "a.zarr"),
               overwrite: true
             )

    assert_unchanged(ctx)
  end

  test "create with an unknown compressor names it", ctx do
    path = Path.join(ctx.dir, "new.zarr")

    assert {:error, {:unsupported_codec, "my_codec"}} =
             ExZarr.create(
               shape: {8},
               chunks: {4},
               dtype: :int32,
               storage: :filesystem,
               path: path,
               compressor: %{id: "my_codec"}
             )

    assert_unchanged(ctx)
  end
end

defmodule ExZarr.BadInput.ApiArgumentsTest do
  @moduledoc """
  Every public function takes only the options it declares (`ExZarr.Options`): a misspelled or
  foreign option is `{:error, {:unknown_option, name}}`, never silently ignored, and a call
  refused for it writes nothing.

  Every public function of `ExZarr`, `ExZarr.Array`, `ExZarr.Group` and `ExZarr.Storage` that
  returns `{:ok, _}` / `:ok` / `{:error, _}` is called with wrong-typed values in each argument
  and in each of its options (atoms, nil, integers, huge and negative integers, floats, maps,
  lists, tuples of the wrong size, strings): it returns `{:error, _}` and never raises. Values
  that happen to be valid in a place are listed with the call and must not raise either. The
  `!` variants raise `ExZarr.Error` only.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Group, Storage}
  alias ExZarr.Test.{Interop, Snapshot}

  @wrong [:atom, nil, true, 0, 7, -1, 2 ** 70, -(2 ** 70), 1.5, %{}, %{a: 1}, [], [1, 2], [:x]] ++
           [[a: :b], {}, {1}, {1, 2, 3}, {-1, -1}, {2 ** 70, 0}, {0.5, 1}, "text", <<255, 0>>]

  # Storage backend options are checked by the backends; paths are never varied, so that no
  # call writes outside the test's directory.
  @not_varied [:path, :fsync, :check_symlinks]

  setup do
    dir = Interop.tmp_dir!("wrong-arguments")
    on_exit(fn -> File.rm_rf!(dir) end)
    path = &Path.join(dir, &1)

    {:ok, a} = ExZarr.create(shape: {8, 8}, chunks: {4, 4}, dtype: :int32, path: path.("a.zarr"))
    {:ok, sharded} = ExZarr.create(shape: {8, 8}, chunks: {2, 2}, shards: {4, 4}, dtype: :uint8)
    {:ok, strings} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :string)
    {:ok, g} = ExZarr.create_group(path: path.("g.zarr"))
    {:ok, _} = Group.create_array(g, "c", shape: {4}, dtype: :uint8)
    {:ok, _} = Group.create_group(g, "s")
    {:ok, fs} = Storage.new(:filesystem, path: path.("s"))
    :ok = Storage.put(fs, "k", "0123456789")

    %{dir: dir, path: path, a: a, sharded: sharded, strings: strings, group: g, fs: fs}
  end

  # {module, function, valid arguments, values valid in a place} for each call below: a place
  # is an argument's position or an option's name.
  @specs [
    "ExZarr.create",
    "ExZarr.open",
    "ExZarr.storage",
    "ExZarr.create_group",
    "ExZarr.open_group",
    "ExZarr.tree",
    "ExZarr.consolidate",
    "ExZarr.close",
    "Array.new",
    "Array.get_slice",
    "Array.get_slice (sharded)",
    "Array.get_slice (strings)",
    "Array.set_slice",
    "Array.set_slice (sharded)",
    "Array.set_slice (strings)",
    "Array.read_chunk",
    "Array.read_chunk (sharded)",
    "Array.read_chunk (strings)",
    "Array.write_chunk",
    "Array.write_chunk (sharded)",
    "Array.write_chunk (strings)",
    "Array.resize",
    "Array.append",
    "Array.append (sharded)",
    "Array.append (strings)",
    "Array attributes",
    "Group.create",
    "Group.read",
    "Group.create_array",
    "Group.create_group",
    "Group.open",
    "Group.members",
    "Group.list",
    "Group.tree",
    "Group.delete",
    "Group.consolidate",
    "Group attributes",
    "Storage.new",
    "Storage.get",
    "Storage.get_ranges",
    "Storage.put",
    "Storage.delete",
    "Storage.list",
    "Storage.list_dir",
    "Storage.close"
  ]

  defp spec("ExZarr.create", c) do
    opts =
      [shape: {8}, chunks: {4}, dtype: :int16, zarr_format: 2, fill_value: 0] ++
        [compressor: %{id: "zlib", level: 1}, attributes: %{"a" => 1}, order: "C"] ++
        [overwrite: true, write_empty_chunks: false, prefix: "x", path: c.path.("n.zarr")]

    {ExZarr, :create, [opts],
     %{shape: [{1}], chunks: [{1}], fill_value: [nil, 0, 7, -1], compressor: [nil]}
     |> Map.merge(%{attributes: [%{}, %{a: 1}], overwrite: [true], write_empty_chunks: [true]})
     |> Map.merge(%{prefix: ["text"]})}
  end

  defp spec("ExZarr.open", c) do
    opts =
      [path: c.path.("a.zarr"), zarr_format: 3, write_empty_chunks: true] ++
        [use_consolidated: false, prefix: ""]

    {ExZarr, :open, [opts],
     %{
       zarr_format: [nil],
       write_empty_chunks: [true],
       use_consolidated: [nil, true],
       prefix: ["text"]
     }}
  end

  defp spec("ExZarr.storage", c) do
    {ExZarr, :storage, [[path: c.path.("st")]], %{0 => [[]]}}
  end

  defp spec("ExZarr.create_group", c) do
    opts =
      [path: c.path.("n.zarr"), attributes: %{}, zarr_format: 2, overwrite: true] ++
        [prefix: "q"]

    {ExZarr, :create_group, [opts],
     %{
       0 => [[]],
       attributes: [%{}, %{a: 1}],
       zarr_format: [nil],
       overwrite: [true],
       prefix: ["text"]
     }}
  end

  defp spec("ExZarr.open_group", c) do
    opts = [path: c.path.("g.zarr"), use_consolidated: false, zarr_format: 3]
    {ExZarr, :open_group, [opts], %{zarr_format: [nil], use_consolidated: [nil]}}
  end

  defp spec("ExZarr.tree", c) do
    {ExZarr, :tree, [[path: c.path.("g.zarr")]], %{}}
  end

  defp spec("ExZarr.consolidate", c) do
    {ExZarr, :consolidate, [[path: c.path.("g.zarr")]], %{}}
  end

  defp spec("ExZarr.close", c) do
    {ExZarr, :close, [c.a], %{}}
  end

  defp spec("Array.new", c) do
    {Array, :new, [c.a.metadata, c.a.storage, [prefix: "a", write_empty_chunks: false]],
     %{2 => [[]], prefix: ["text"], write_empty_chunks: [true]}}
  end

  defp spec("Array.get_slice", c) do
    opts = [start: {0, 0}, stop: {2, 2}, max_concurrency: 2, timeout: 1000, coalesce_gap: 1]
    {Array, :get_slice, [c.a, opts], slice_ok(%{1 => [[]], coalesce_gap: [0, 7, 2 ** 70]})}
  end

  defp spec("Array.get_slice (sharded)", c) do
    {Array, :get_slice, [c.sharded, [start: {0, 0}, stop: {2, 2}, coalesce_gap: 10]],
     slice_ok(%{1 => [[]], coalesce_gap: [0, 7, 2 ** 70]})}
  end

  defp spec("Array.get_slice (strings)", c) do
    {Array, :get_slice, [c.strings, [start: {0}, stop: {2}]],
     %{1 => [[]], start: [nil, {1}], stop: [nil, {1}]}}
  end

  defp spec("Array.set_slice", c) do
    opts = [start: {0, 0}, stop: {2, 2}, max_concurrency: 2, timeout: 1000]
    {Array, :set_slice, [c.a, <<0::32*4>>, opts], slice_ok(%{})}
  end

  defp spec("Array.set_slice (sharded)", c) do
    {Array, :set_slice, [c.sharded, <<0::8*4>>, [start: {0, 0}, stop: {2, 2}]],
     %{1 => ["text"], start: [nil]}}
  end

  defp spec("Array.set_slice (strings)", c) do
    {Array, :set_slice, [c.strings, ["a", "b"], [start: {0}, stop: {2}]], %{start: [nil]}}
  end

  defp spec("Array.read_chunk", c) do
    {Array, :read_chunk, [c.a, {0, 0}, [level: :chunk]], %{2 => [[]]}}
  end

  defp spec("Array.read_chunk (sharded)", c) do
    {Array, :read_chunk, [c.sharded, {0, 0}, [level: :inner]], %{2 => [[]]}}
  end

  defp spec("Array.read_chunk (strings)", c) do
    {Array, :read_chunk, [c.strings, {0}, []], %{}}
  end

  defp spec("Array.write_chunk", c) do
    {Array, :write_chunk, [c.a, {0, 0}, <<0::32*16>>], %{}}
  end

  defp spec("Array.write_chunk (sharded)", c) do
    {Array, :write_chunk, [c.sharded, {0, 0}, <<0::8*16>>], %{}}
  end

  defp spec("Array.write_chunk (strings)", c) do
    {Array, :write_chunk, [c.strings, {0}, ["a", "b"]], %{1 => [{1}]}}
  end

  defp spec("Array.resize", c) do
    {Array, :resize, [c.a, {8, 8}, [max_concurrency: 1, timeout: 1000]],
     slice_ok(%{1 => [{2 ** 70, 0}], 2 => [[]]})}
  end

  defp spec("Array.append", c) do
    {Array, :append, [c.a, <<0::32*8>>, 0, [max_concurrency: 1, timeout: 1000]],
     slice_ok(%{2 => [0, -1], 3 => [[]]})}
  end

  defp spec("Array.append (sharded)", c) do
    {Array, :append, [c.sharded, <<0::8*8>>, 1, []], %{2 => [0, -1], 3 => [[]]}}
  end

  defp spec("Array.append (strings)", c) do
    {Array, :append, [c.strings, ["x"], 0, []], %{1 => [[]], 2 => [0, -1], 3 => [[]]}}
  end

  defp spec("Array attributes", c), do: attribute_specs(Array, c.a)

  defp spec("Group.create", c) do
    {Group, :create, [c.fs, "grp", [zarr_format: 3, attributes: %{}, overwrite: true]],
     %{
       1 => ["text"],
       2 => [[]],
       zarr_format: [nil],
       attributes: [%{}, %{a: 1}],
       overwrite: [true]
     }}
  end

  defp spec("Group.read", c) do
    {Group, :read, [c.group.storage, "", [zarr_format: 3, use_consolidated: false]],
     %{2 => [[]], zarr_format: [nil], use_consolidated: [nil]}}
  end

  defp spec("Group.create_array", c) do
    {Group, :create_array, [c.group, "c2", [shape: {4}, dtype: :uint8, overwrite: true]],
     %{1 => ["text"], shape: [{}, {1}, {1, 2, 3}, {2 ** 70, 0}], overwrite: [true]}}
  end

  defp spec("Group.create_group", c) do
    {Group, :create_group, [c.group, "s2", [attributes: %{}, overwrite: true]],
     %{1 => ["text"], 2 => [[]], attributes: [%{}, %{a: 1}], overwrite: [true]}}
  end

  defp spec("Group.open", c) do
    {Group, :open, [c.group, "c", [write_empty_chunks: true]],
     %{2 => [[]], write_empty_chunks: [true]}}
  end

  defp spec("Group.members", c) do
    {Group, :members, [c.group, [recursive: true]], %{1 => [[]], recursive: [true]}}
  end

  defp spec("Group.list", c) do
    {Group, :list, [c.group], %{}}
  end

  defp spec("Group.tree", c) do
    {Group, :tree, [c.group], %{}}
  end

  defp spec("Group.delete", c) do
    {Group, :delete, [c.group, "s"], %{}}
  end

  defp spec("Group.consolidate", c) do
    {Group, :consolidate, [c.group], %{}}
  end

  defp spec("Group attributes", c), do: attribute_specs(Group, c.group)

  defp spec("Storage.new", c) do
    {Storage, :new, [:filesystem, [path: c.path.("s2")]], %{}}
  end

  defp spec("Storage.get", c) do
    {Storage, :get, [c.fs, "k", {0, 2}], %{2 => [nil, {2 ** 70, 0}]}}
  end

  defp spec("Storage.get_ranges", c) do
    {Storage, :get_ranges, [c.fs, "k", [{0, 2}, {:suffix, 1}]], %{2 => [[]]}}
  end

  defp spec("Storage.put", c) do
    {Storage, :put, [c.fs, "k2", "abc"], %{1 => ["text"], 2 => [[], [1, 2], "text", <<255, 0>>]}}
  end

  defp spec("Storage.delete", c) do
    {Storage, :delete, [c.fs, "k2"], %{1 => ["text"]}}
  end

  defp spec("Storage.list", c) do
    {Storage, :list, [c.fs, ""], %{1 => ["text"]}}
  end

  defp spec("Storage.list_dir", c) do
    {Storage, :list_dir, [c.fs, ""], %{1 => ["text"]}}
  end

  defp spec("Storage.close", c) do
    {Storage, :close, [c.fs], %{}}
  end

  defp attribute_specs(mod, node) do
    [
      {mod, :set_attributes, [node, %{"x" => 1}], %{1 => [%{}, %{a: 1}]}},
      {mod, :update_attributes, [node, %{"x" => 1}], %{1 => [%{}, %{a: 1}]}},
      {mod, :delete_attributes, [node, ["x"]], %{1 => [[], [:x]]}}
    ]
  end

  # Values valid for the options of reads and writes besides the selection.
  defp slice_ok(ok) do
    Map.merge(
      %{start: [nil], stop: [nil], max_concurrency: [7, 2 ** 70], timeout: [0, 7]},
      ok
    )
  end

  for name <- @specs do
    @tag spec: name
    test "#{name} with wrong-typed arguments returns {:error, _}", ctx do
      for {mod, fun, args, ok} <- List.wrap(spec(ctx.spec, ctx)),
          {place, args} <- variants(args),
          bad <- @wrong do
        args = args.(bad)
        before = Snapshot.take(ctx.dir)
        result = outcome(fn -> apply(mod, fun, args) end)
        call = "#{inspect(mod)}.#{fun}(#{Enum.map_join(args, ", ", &inspect(&1, limit: 5))})"

        if bad in Map.get(ok, place, []) do
          assert match?({:ok, _}, result) or result == :ok or match?({:error, _}, result),
                 "#{call} gave #{inspect(result)}"
        else
          assert match?({:error, _}, result), "#{call} gave #{inspect(result, limit: 5)}"
        end

        if match?({:error, _}, result),
          do: assert(Snapshot.diff(before, Snapshot.take(ctx.dir)) == [], "#{call} wrote")
      end
    end
  end

  # The calls that take options (the storage backends check theirs themselves).
  @without_options ~w(ExZarr.close Group.list Group.tree Group.delete Group.consolidate)
  @with_options Enum.reject(
                  @specs,
                  &(&1 in @without_options or &1 =~ ~r/^Storage|attributes|write_chunk/)
                )

  for name <- @with_options do
    @tag spec: name
    test "#{name} refuses a misspelled option and writes nothing", ctx do
      checked =
        for {mod, fun, args, _ok} <- List.wrap(spec(ctx.spec, ctx)),
            {arg, i} <- Enum.with_index(args),
            is_list(arg) and Keyword.keyword?(arg) do
          before = Snapshot.take(ctx.dir)
          args = List.replace_at(args, i, arg ++ [chnks: {4}])
          assert apply(mod, fun, args) == {:error, {:unknown_option, :chnks}}
          assert Snapshot.diff(before, Snapshot.take(ctx.dir)) == []
        end

      assert checked != []
    end
  end

  # {place, fn bad -> arguments} for each argument and each option of a keyword argument.
  defp variants(args) do
    for {arg, i} <- Enum.with_index(args),
        variant <- [{i, &List.replace_at(args, i, &1)} | option_variants(args, arg, i)],
        do: variant
  end

  defp option_variants(args, arg, i) do
    if is_list(arg) and arg != [] and Keyword.keyword?(arg) do
      for {key, _} <- arg,
          key not in @not_varied,
          do: {key, &List.replace_at(args, i, Keyword.put(arg, key, &1))}
    else
      []
    end
  end

  defp outcome(fun) do
    fun.()
  rescue
    e -> {:raised, e}
  catch
    :exit, reason -> {:exited, reason}
  end

  test "the ! variants raise ExZarr.Error only", ctx do
    bang_calls = [
      &ExZarr.create!/1,
      &ExZarr.open!/1,
      &ExZarr.create_group!/1,
      &ExZarr.open_group!/1,
      &Array.get_slice!(ctx.a, &1),
      &Array.set_slice!(ctx.a, <<0::32>>, &1),
      &Group.open!(ctx.group, "c", &1)
    ]

    for call <- bang_calls, bad <- @wrong, bad != [] do
      assert_raise ExZarr.Error, fn -> call.(bad) end
    end
  end

  test "the cases of the hardening issue", ctx do
    a = ctx.a
    assert {:error, {:invalid_options, 123}} = ExZarr.open(123)
    assert {:error, {:invalid_options, :all}} = Array.get_slice(a, :all)
    assert {:error, {:invalid_options, _}} = Array.get_slice(a, %{start: {0, 0}, stop: {1, 1}})

    assert {:error, {:invalid_chunk_coords, [0, 0]}} =
             Array.write_chunk(ctx.sharded, [0, 0], <<0::128>>)

    assert {:error, {:invalid_data, _}} = Array.append(a, [1, 2])
    assert {:error, {:invalid_ranges, :all}} = Storage.get_ranges(ctx.fs, "k", :all)
    assert {:error, {:invalid_key, :c}} = Storage.list(ctx.fs, :c)
    assert_raise ExZarr.Error, fn -> Array.chunk_stream(a, level: :inner) end
  end

  test "chunk_key raises ExZarr.Error for coordinates that are not a chunk of the grid", ctx do
    assert Array.chunk_key(ctx.a, {1, 0}) =~ ~r/1.0$/

    for coords <- [{-1, 0}, {99, 0}, {0}, {0, 0, 0}, [0, 0], nil, {0.0, 0}, {:a, 0}] do
      assert_raise ExZarr.Error, ~r/invalid_chunk_coords/, fn ->
        Array.chunk_key(ctx.a, coords)
      end
    end
  end

  test "a chunk that cannot be read raises ExZarr.Error in the consumer of chunk_stream", ctx do
    :ok = Array.set_slice(ctx.a, :binary.copy(<<1>>, 256))
    :ok = Array.set_slice(ctx.sharded, :binary.copy(<<1>>, 64))
    :ok = Storage.put(ctx.a.storage, Array.chunk_key(ctx.a, {1, 0}), "garbage")
    :ok = Storage.put(ctx.sharded.storage, Array.chunk_key(ctx.sharded, {1, 1}), "garbage")

    # in tasks too: a task that raised would kill the consumer through its link
    for parallel <- [1, 4],
        {a, opts} <- [{ctx.a, []}, {ctx.sharded, []}, {ctx.sharded, [level: :inner]}] do
      stream = Array.chunk_stream(a, [parallel: parallel] ++ opts)
      assert_raise ExZarr.Error, ~r/corrupt/, fn -> Enum.to_list(stream) end
    end
  end

  test "append takes a list of strings for a string array", ctx do
    assert {:ok, s} = Array.append(ctx.strings, ["x", "yy"])
    assert s.metadata.shape == {6}
    assert {:ok, ["", "", "", "", "x", "yy"]} = Array.get_slice(s)
    assert {:error, {:invalid_data, _}} = Array.append(s, "xyz")
    assert {:error, {:wrong_data_size, _}} = Array.append(ctx.a, <<0::32*3>>)
  end

  test "get_slice with step: reads every step-th element; bad steps are errors", ctx do
    for a <- [ctx.a, ctx.sharded, ctx.strings] do
      n = tuple_size(a.metadata.shape)
      box = [start: Tuple.duplicate(0, n), stop: Tuple.duplicate(4, n)]
      {:ok, stepped} = Array.get_slice(a, box ++ [step: Tuple.duplicate(2, n)])
      {:ok, all} = Array.get_slice(a, box)
      size = if is_list(all), do: length(all), else: byte_size(all)
      got = if is_list(stepped), do: length(stepped), else: byte_size(stepped)
      assert got * Integer.pow(2, n) == size

      assert Array.get_slice(a, box ++ [step: Tuple.duplicate(0, n)]) ==
               {:error, {:invalid_step, axis: 0, step: 0}}

      assert {:error, {:invalid_step, :two, ndim: ^n}} = Array.get_slice(a, step: :two)
    end
  end

  test "an option of a function applies there only", ctx do
    a = ctx.a
    before = Snapshot.take(ctx.dir)
    # read options are not write options, and the other way round
    assert Array.set_slice(a, <<0::32>>, stop: {1, 1}, coalesce_gap: 0) ==
             {:error, {:unknown_option, :coalesce_gap}}

    assert Array.get_slice(a, parallel: 2) == {:error, {:unknown_option, :parallel}}

    assert Array.read_chunk(a, {0, 0}, max_concurrency: 2) ==
             {:error, {:unknown_option, :max_concurrency}}

    # consolidate reads the tree itself: a use_consolidated would be ignored
    assert ExZarr.consolidate(path: ctx.path.("g.zarr"), use_consolidated: true) ==
             {:error, {:unknown_option, :use_consolidated}}

    # the node's path inside a group comes from the call, not from options
    for {key, value} <- [path: ctx.path.("x"), storage: :memory, prefix: "x", cache: 100] do
      assert Group.create_array(ctx.group, "n", [{:shape, {2}}, {key, value}]) ==
               {:error, {:unknown_option, key}}
    end

    assert Snapshot.diff(before, Snapshot.take(ctx.dir)) == []
  end

  test "storage options are those of the backend the call opens", ctx do
    # the memory store has no path, the filesystem no table or bucket
    assert ExZarr.create(shape: {2}, storage: :memory, path: ctx.path.("a.zarr")) ==
             {:error, {:unknown_option, :path}}

    assert ExZarr.open(path: ctx.path.("a.zarr"), table_name: :t) ==
             {:error, {:unknown_option, :table_name}}

    assert ExZarr.open(path: ctx.path.("a.zarr"), bucket: "b") ==
             {:error, {:unknown_option, :bucket}}

    assert ExZarr.storage(storage: :ets, table: :t) == {:error, {:unknown_option, :table}}

    # a store given as a handle takes no backend options
    store = ctx.a.storage
    assert ExZarr.open(storage: store, fsync: true) == {:error, {:unknown_option, :fsync}}

    # the backend's own options are accepted
    assert {:ok, %Array{}} =
             ExZarr.open(path: ctx.path.("a.zarr"), fsync: true, check_symlinks: true)

    assert {:ok, %Array{}} = ExZarr.open(storage: store, write_empty_chunks: true)
  end

  test "option values of the wrong kind name the option", ctx do
    a = ctx.a

    for {key, value} <- [max_concurrency: 0, timeout: -1, timeout: 2 ** 40, coalesce_gap: -1] do
      assert Array.get_slice(a, [{key, value}]) == {:error, {:invalid_option, key, value}}
    end

    assert Array.read_chunk(a, {0, 0}, level: :outer) ==
             {:error, {:invalid_option, :level, :outer}}

    assert ExZarr.open(path: ctx.path.("a.zarr"), write_empty_chunks: "yes") ==
             {:error, {:invalid_option, :write_empty_chunks, "yes"}}

    assert Group.members(ctx.group, recursive: 1) == {:error, {:invalid_option, :recursive, 1}}

    assert Array.new(a.metadata, a.storage, prefix: "../up") ==
             {:error, {:invalid_prefix, "../up"}}
  end

  test "options that are not a keyword list", ctx do
    a = ctx.a

    for opts <- [%{start: {0, 0}}, :all, [{0, 0}], [:start], "start", nil] do
      assert Array.get_slice(a, opts) == {:error, {:invalid_options, opts}}
      assert ExZarr.create(opts) == {:error, {:invalid_options, opts}}
      assert Group.members(ctx.group, opts) == {:error, {:invalid_options, opts}}
      assert Storage.new(:memory, opts) == {:error, {:invalid_options, opts}}
    end
  end

  test "chunk_stream checks its options when called, raising ExZarr.Error", ctx do
    a = ctx.a

    for opts <- [[chnks: 1], [parallel: 0], [ordered: :yes], %{parallel: 2}] do
      assert_raise ExZarr.Error, fn -> Array.chunk_stream(a, opts) end
    end

    # level: :inner needs a sharded array; strings have no inner chunks either
    assert_raise ExZarr.Error, ~r/not_sharded/, fn -> Array.chunk_stream(a, level: :inner) end
    assert_raise ExZarr.Error, fn -> Array.chunk_stream(ctx.strings, level: :inner) end
    assert_raise ExZarr.Error, fn -> Array.chunk_stream(:not_an_array) end

    # valid options still stream, level: :chunk being the default
    assert length(Enum.to_list(Array.chunk_stream(a, level: :chunk, parallel: 1))) == 4
  end
end
