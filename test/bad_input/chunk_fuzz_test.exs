defmodule ExZarr.BadInput.ChunkFuzzTest do
  @moduledoc """
  Mutation fuzzing of stored chunks for every codec ExZarr reads (gzip, zlib, crc32c and, when
  present, zstd, lz4, blosc, bz2, lzma): byte flips, truncations, insertions and random blosc
  headers. Every read must give `{:ok, chunk}` of the exact chunk size or `{:error, _}`. One
  child BEAM (`ExZarr.Test.ChildBeam`) fuzzes all codecs, so that a crash in native code fails
  the tests instead of killing the test run. Deterministic (fixed seed).
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{ChildBeam, Interop}

  @iterations 200

  @codecs [
    {"gzip", [compressor: %{id: "gzip", level: 5}]},
    {"zlib", [zarr_format: 2, compressor: %{id: "zlib", level: 5}]},
    {"crc32c",
     [
       codecs: [
         %{name: "bytes", configuration: %{"endian" => "little"}},
         %{name: "crc32c", configuration: %{}}
       ]
     ]}
  ]

  @native_codecs [
    {"zstd", [compressor: %{id: "zstd", level: 3}]},
    {"lz4", [zarr_format: 2, compressor: %{id: "lz4", acceleration: 1}]},
    {"blosc-lz4", [compressor: %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1}]},
    {"blosc-zstd", [compressor: %{id: "blosc", cname: "zstd", clevel: 5, shuffle: 2}]},
    {"bz2", [zarr_format: 2, compressor: %{id: "bz2", level: 5}]},
    {"lzma", [zarr_format: 2, compressor: %{id: "lzma"}]}
  ]

  @child """
  [dir, codecs_text, iterations] = System.argv()
  {codecs, _} = Code.eval_string(codecs_text)

  fuzz = fn label, opts ->
    path = Path.join(dir, label <> ".zarr")

    # 64x64 int32 in one chunk: smooth values that compress, with some noise.
    data = for i <- 0..4095, into: <<>>, do: <<div(i * i, 7) + rem(i * 7919, 13)::32-little>>

    {:ok, a} =
      ExZarr.create(
        [shape: {64, 64}, chunks: {64, 64}, dtype: :int32, storage: :filesystem, path: path] ++ opts
      )

    :ok = ExZarr.Array.set_slice(a, data, start: {0, 0}, stop: {64, 64})
    key = Enum.find([Path.join(path, "c/0/0"), Path.join(path, "0.0")], &File.exists?/1)
    valid = File.read!(key)
    :rand.seed(:exsss, {1, 2, 3})

    mutate = fn bin ->
      n = byte_size(bin)

      case :rand.uniform(5) do
        1 ->
          at = :rand.uniform(n) - 1
          <<pre::binary-size(at), b, rest::binary>> = bin
          <<pre::binary, Bitwise.bxor(b, :rand.uniform(255)), rest::binary>>

        2 ->
          binary_part(bin, 0, :rand.uniform(n) - 1)

        3 ->
          at = :rand.uniform(n + 1) - 1
          <<pre::binary-size(at), rest::binary>> = bin
          <<pre::binary, :crypto.strong_rand_bytes(:rand.uniform(16))::binary, rest::binary>>

        4 ->
          head = min(16, n)
          <<_::binary-size(head), rest::binary>> = bin
          <<:rand.bytes(head)::binary, rest::binary>>

        5 ->
          Enum.reduce(1..8, bin, fn _, acc ->
            at = :rand.uniform(byte_size(acc)) - 1
            <<pre::binary-size(at), _, rest::binary>> = acc
            <<pre::binary, :rand.uniform(256) - 1, rest::binary>>
          end)
      end
    end

    bad =
      Enum.reduce(1..String.to_integer(iterations), [], fn _, bad ->
        File.write!(key, mutate.(valid))

        case ExZarr.Array.read_chunk(a, {0, 0}) do
          {:ok, bin} when byte_size(bin) == 16_384 -> bad
          {:error, _} -> bad
          other -> [inspect(other, limit: 5) | bad]
        end
      end)

    File.write!(key, valid)
    {:ok, ^data} = ExZarr.Array.get_slice(a, start: {0, 0}, stop: {64, 64})
    IO.puts("fuzz " <> label <> ": " <> inspect(bad))
  end

  for {label, opts} <- codecs, do: fuzz.(label, opts)
  """

  native? = Interop.native_codecs?()
  @fuzzed if native?, do: @codecs ++ @native_codecs, else: @codecs

  setup_all do
    dir = Interop.tmp_dir!("chunk-fuzz")
    on_exit(fn -> File.rm_rf!(dir) end)
    {out, status} = run_child(dir, @fuzzed)
    %{out: out, status: status}
  end

  defp run_child(dir, codecs), do: ChildBeam.run(@child, [dir, inspect(codecs), "#{@iterations}"])

  for {label, _opts} <- @codecs ++ @native_codecs do
    if label in Enum.map(@native_codecs, &elem(&1, 0)) do
      @tag :native_codecs
      unless native?, do: @tag(skip: "ExZarr does not support the native codecs yet")
    end

    @tag codec: label
    test "#{@iterations} mutated #{label} chunks read as a chunk or an error", ctx do
      assert ctx.out =~ "fuzz #{ctx.codec}: []", "child exited #{ctx.status}:\n#{ctx.out}"
    end
  end
end
