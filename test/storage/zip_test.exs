defmodule ExZarr.Storage.ZipTest do
  use ExUnit.Case, async: true
  @moduletag :tmp_dir

  use ExZarr.StorageConformance,
    backend: ExZarr.Storage.Zip,
    opts: fn ctx -> [path: Path.join(ctx.tmp_dir, "store.zip"), mode: :write, owner: self()] end

  alias ExZarr.Storage.Zip
  alias ExZarr.Test.Python

  defp open(path, mode \\ :read) do
    {:ok, store} = Storage.new(Zip, path: path, mode: mode, owner: self())
    store
  end

  defp zip_path(ctx), do: Path.join(ctx.tmp_dir, "store.zip")

  test "values survive close and reopen; the directory lists the newest of each key", ctx do
    store = ctx.store
    :ok = Storage.put(store, "zarr.json", "{}")
    :ok = Storage.put(store, "c/0/0", ["ab", "cd"])
    :ok = Storage.put(store, "c/0/0", "newer")
    :ok = Storage.put(store, "ünï/.zattrs", "")
    :ok = Storage.put(store, "gone", "x")
    :ok = Storage.delete(store, "gone")
    refute File.exists?(zip_path(ctx))
    assert Zip.close(store.state) == :ok
    assert Zip.close(store.state) == :ok
    assert Storage.get(store, "zarr.json") == {:error, {:closed, zip_path(ctx)}}
    assert Storage.put(store, "k", "v") == {:error, {:closed, zip_path(ctx)}}
    assert File.ls!(ctx.tmp_dir) == ["store.zip"]

    reader = open(zip_path(ctx))
    assert Storage.list(reader) == {:ok, ["c/0/0", "zarr.json", "ünï/.zattrs"]}
    assert Storage.get(reader, "c/0/0") == {:ok, "newer"}
    assert Storage.get(reader, "c/0/0", {:suffix, 2}) == {:ok, "er"}
    assert Storage.get(reader, "ünï/.zattrs") == {:ok, ""}
    assert Storage.put(reader, "k", "v") == {:error, {:read_only, zip_path(ctx)}}
    assert Storage.delete(reader, "k") == {:error, {:read_only, zip_path(ctx)}}

    # OTP's own zip reader agrees.
    {:ok, files} = :zip.unzip(String.to_charlist(zip_path(ctx)), [:memory])

    assert Enum.sort(for {name, data} <- files, do: {List.to_string(name), data}) ==
             [{"c/0/0", "newer"}, {"zarr.json", "{}"}, {"ünï/.zattrs", ""}]
  end

  test "append mode adds to an existing archive", ctx do
    :ok = Storage.put(ctx.store, "a", "1")
    :ok = Zip.close(ctx.store.state)
    store = open(zip_path(ctx), :append)
    assert Storage.get(store, "a") == {:ok, "1"}
    :ok = Storage.put(store, "b", "2")
    :ok = Storage.put(store, "a", "3")
    :ok = Zip.close(store.state)
    reader = open(zip_path(ctx))
    assert Storage.list(reader) == {:ok, ["a", "b"]}
    assert Storage.get(reader, "a") == {:ok, "3"}
    # Append on a missing file starts a new archive.
    new = open(Path.join(ctx.tmp_dir, "new.zip"), :append)
    :ok = Storage.put(new, "x", "y")
    :ok = Zip.close(new.state)
    assert Storage.get(open(Path.join(ctx.tmp_dir, "new.zip")), "x") == {:ok, "y"}
  end

  test "the archive is finalized when its owner exits", ctx do
    path = Path.join(ctx.tmp_dir, "owned.zip")

    Task.async(fn ->
      {:ok, store} = Storage.new(Zip, path: path, mode: :write, owner: self())
      :ok = Storage.put(store, "k", "v")
      store.state.server
    end)
    |> Task.await()
    |> then(fn server ->
      ref = Process.monitor(server)
      assert_receive {:DOWN, ^ref, _, _, _}
    end)

    assert Storage.get(open(path), "k") == {:ok, "v"}
  end

  test "one writer: a second one, here or in another OS process, is refused", ctx do
    path = zip_path(ctx)
    lock = Path.join(ctx.tmp_dir, ".store.zip.lock")
    :ok = Storage.put(ctx.store, "a", "1")
    assert File.exists?(lock)

    for mode <- [:write, :append] do
      assert Storage.new(Zip, path: path, mode: mode) == {:error, {:locked, path}}
    end

    {out, 0} =
      ExZarr.Test.ChildBeam.run(
        ~S"""
        [path] = System.argv()
        result = ExZarr.Storage.new(ExZarr.Storage.Zip, path: path, mode: :append)
        IO.puts(if result == {:error, {:locked, path}}, do: "refused", else: inspect(result))
        """,
        [path]
      )

    assert out =~ "refused"

    :ok = Zip.close(ctx.store.state)
    refute File.exists?(lock)
    assert Storage.put_if(open_reader(path), "c", "3", :absent) == {:error, {:read_only, path}}
    # a writer that dies (its archive unfinished) holds the lock no more
    writer = open(path, :write)
    assert Storage.put_if(writer, "b", "2", :absent) |> elem(0) == :ok
    ref = Process.monitor(writer.state.server)
    Process.exit(writer.state.server, :kill)
    assert_receive {:DOWN, ^ref, _, _, _}
    again = open(path, :write)
    assert Storage.put_if(again, "b", "2", :absent) |> elem(0) == :ok
  end

  defp open_reader(path) do
    {:ok, store} = Storage.new(Zip, path: path, mode: :read, owner: self())
    store
  end

  test "bad files and options give errors", ctx do
    bad = Path.join(ctx.tmp_dir, "bad.zip")
    File.write!(bad, "this is not a zip file at all, it is text")
    assert {:error, {:bad_zip, :not_a_zip_file, ^bad}} = Storage.new(Zip, path: bad)
    missing = Path.join(ctx.tmp_dir, "missing.zip")
    assert {:error, {:file_error, :enoent, ^missing}} = Storage.new(Zip, path: missing)
    assert Storage.new(Zip, path: bad, mode: :rw) == {:error, {:invalid_option, :mode, :rw}}
    assert Storage.new(Zip, []) == {:error, {:missing_option, :path}}

    assert Storage.new(Zip, path: "zip://host/x.zip") ==
             {:error, {:invalid_path, "zip://host/x.zip"}}

    # A member whose bytes were damaged fails its CRC check instead of returning garbage.
    :ok = Storage.put(ctx.store, "k", "0123456789")
    :ok = Zip.close(ctx.store.state)
    data = File.read!(zip_path(ctx))
    [{at, _}] = :binary.matches(data, "0123456789")

    File.write!(
      zip_path(ctx),
      binary_part(data, 0, at) <> "X" <> binary_part(data, at + 1, byte_size(data) - at - 1)
    )

    reader = open("zip://" <> zip_path(ctx))
    assert Storage.get(reader, "k") == {:error, {:bad_zip_member, "k", :crc_mismatch}}
    assert Storage.get(reader, "k", {1, 3}) == {:ok, "123"}
  end

  test "a zip written by zarr-python opens and reads the same bytes", ctx do
    path = Path.join(ctx.tmp_dir, "py.zip")

    out =
      Python.run!(
        """
        import sys, zipfile, json, numpy as np, zarr
        from zarr.storage import ZipStore
        path = sys.argv[1]
        for fmt, name, comp in [(3, "v3", zipfile.ZIP_STORED), (2, "v2", zipfile.ZIP_STORED)]:
            store = ZipStore(path, mode="a", compression=comp)
            a = zarr.create_array(store, name=name, shape=(5, 7), chunks=(2, 3), dtype="int32",
                                  zarr_format=fmt, compressors=None, fill_value=0)
            a[:] = np.arange(35, dtype="int32").reshape(5, 7)
            store.close()
        store = ZipStore(path, mode="a", compression=zipfile.ZIP_DEFLATED)
        store._sync_open()
        store._set("deflated/key", zarr.core.buffer.default_buffer_prototype().buffer.from_bytes(b"abc" * 1000))
        store.close()
        with zipfile.ZipFile(path) as z:
            print(json.dumps({i.filename: z.read(i).hex() for i in z.infolist()}))
        """,
        [path]
      )

    expected =
      for {k, hex} <- :jiffy.decode(out, [:return_maps]),
          into: %{},
          do: {k, Base.decode16!(hex, case: :lower)}

    store = open(path)
    assert Storage.list(store) == {:ok, expected |> Map.keys() |> Enum.sort()}
    for {key, value} <- expected, do: assert(Storage.get(store, key) == {:ok, value})
    assert Storage.get(store, "deflated/key", {2997, 10}) == {:ok, "abc"}
    assert Storage.get(store, "v3/c/2/2") == {:ok, <<34::little-32, 0::160>>}
    assert {:ok, <<_::binary-24>>} = Storage.get(store, "v2/0.0")
  end

  test "arrays ExZarr writes into a zip open in zarr-python", ctx do
    path = Path.join(ctx.tmp_dir, "ex.zip")
    store = open(path, :write)
    data = for i <- 0..11, into: <<>>, do: <<i * 1000::little-16>>

    for {fmt, prefix} <- [{3, "v3"}, {2, "v2"}] do
      {:ok, array} =
        ExZarr.create(
          storage: store,
          prefix: prefix,
          shape: {4, 3},
          chunks: {3, 2},
          dtype: :uint16,
          zarr_format: fmt,
          fill_value: 7,
          compressor: %{id: "gzip", level: 1}
        )

      :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {4, 3})
    end

    :ok = Zip.close(store.state)

    out =
      Python.run!(
        """
        import sys, zarr
        from zarr.storage import ZipStore
        store = ZipStore(sys.argv[1], mode="r")
        for p in ["v3", "v2"]:
            a = zarr.open_array(store, path=p, mode="r")
            print(a.metadata.zarr_format, a[:].tolist())
        """,
        [path]
      )

    rows = "[[0, 1000, 2000], [3000, 4000, 5000], [6000, 7000, 8000], [9000, 10000, 11000]]"
    assert String.split(out, "\n", trim: true) == ["3 " <> rows, "2 " <> rows]

    # And ExZarr reads them back from the closed archive.
    reader = open(path)

    for prefix <- ["v3", "v2"] do
      {:ok, array} = ExZarr.open(storage: reader, prefix: prefix)
      assert ExZarr.Array.get_slice(array, start: {0, 0}, stop: {4, 3}) == {:ok, data}
    end
  end

  test "damaged archives give errors, never crashes or huge allocations", ctx do
    path = Path.join(ctx.tmp_dir, "good.zip")

    Python.run!(
      """
      import sys, zipfile
      with zipfile.ZipFile(sys.argv[1], "w") as z:
          z.writestr("zarr.json", "{}")
          z.writestr("c/0", bytes(range(200)))
          z.writestr(zipfile.ZipInfo("c/1"), b"abc" * 300, compress_type=zipfile.ZIP_DEFLATED)
      """,
      [path]
    )

    good = File.read!(path)
    size = byte_size(good)
    :rand.seed(:exsss, {1, 2, 3})

    damaged =
      for(cut <- 0..(size - 1), do: binary_part(good, 0, cut)) ++
        for _ <- 1..300 do
          at = :rand.uniform(size) - 1
          <<head::binary-size(at), _, rest::binary>> = good
          head <> <<:rand.uniform(256) - 1>> <> rest
        end

    bad = Path.join(ctx.tmp_dir, "bad.zip")

    for bytes <- damaged do
      File.write!(bad, bytes)

      case Storage.new(Zip, path: bad) do
        {:ok, store} ->
          {:ok, keys} = Storage.list(store)

          for key <- keys, range <- [nil, {1, 5}, {:suffix, 3}] do
            assert match?({:ok, b} when is_binary(b), Storage.get(store, key, range)) or
                     match?({:error, _}, Storage.get(store, key, range))
          end

          :ok = Zip.close(store.state)

        {:error, _} ->
          :ok
      end
    end
  end

  # A central directory entry for "c/1" (the archive's only entry with that name) with its
  # 32-bit field at `at` (16 crc, 20 compressed size, 24 size, 42 offset) set to `value`.
  defp patch_entry(bytes, at, value) do
    [{pos, _}] =
      :binary.matches(bytes, <<0x02014B50::32-little>>)
      |> Enum.filter(fn {pos, _} ->
        binary_part(bytes, pos + 46, 3) == "c/1"
      end)

    <<head::binary-size(pos + at), _::32, rest::binary>> = bytes
    head <> <<value::32-little>> <> rest
  end

  test "a member whose entry does not fit the archive is an error, never a missing key", ctx do
    path = Path.join(ctx.tmp_dir, "good.zip")
    store = open(path, :write)
    :ok = Storage.put(store, "c/0", "first")
    :ok = Storage.put(store, "c/1", :binary.copy("x", 100))
    :ok = Zip.close(store.state)
    good = File.read!(path)

    for {at, value} <- [{20, 0xFFFFFFF0}, {24, 0xFFFFFFF0}, {20, 50}, {42, 0xFFFFFFF0}] do
      bad = Path.join(ctx.tmp_dir, "bad-#{at}-#{value}.zip")
      File.write!(bad, patch_entry(good, at, value))
      reader = open_reader(bad)
      assert {:ok, ["c/0", "c/1"]} = Storage.list(reader)
      assert {:error, {:bad_zip_member, "c/1", :damaged_entry}} = Storage.get(reader, "c/1")
      assert {:error, {:bad_zip_member, "c/1", _}} = Storage.get(reader, "c/1", {0, 4})
      assert {:ok, "first"} = Storage.get(reader, "c/0")
      :ok = Zip.close(reader.state)
    end
  end

  @tag timeout: 300_000
  test "ZIP64: more than 65,535 members, both ways", ctx do
    path = Path.join(ctx.tmp_dir, "many.zip")
    store = open(path, :write)
    n = 70_000
    for i <- 1..n, do: :ok = Storage.put(store, "c/#{i}", <<i::32>>)
    :ok = Zip.close(store.state)

    out =
      Python.run!(
        """
        import sys, zipfile
        with zipfile.ZipFile(sys.argv[1]) as z:
            names = z.namelist()
            print(len(names), z.read("c/69999").hex())
        with zipfile.ZipFile(sys.argv[2], "w") as z:
            for i in range(70000):
                z.writestr(f"k/{i}", i.to_bytes(4, "big"))
        """,
        [path, Path.join(ctx.tmp_dir, "py_many.zip")]
      )

    assert String.trim(out) == "70000 " <> Base.encode16(<<69_999::32>>, case: :lower)
    reader = open(Path.join(ctx.tmp_dir, "py_many.zip"))
    assert {:ok, keys} = Storage.list(reader)
    assert length(keys) == 70_000
    assert Storage.get(reader, "k/65536") == {:ok, <<65_536::32>>}
  end
end
