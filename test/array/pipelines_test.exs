defmodule ExZarr.Array.PipelinesTest do
  use ExUnit.Case, async: true

  alias ExZarr.Array.Pipelines

  defp create(opts) do
    {:ok, a} = ExZarr.create(Keyword.merge([storage: :memory, dtype: :uint8], opts))
    a
  end

  test "a regular grid has the array's pipeline only" do
    a = create(shape: {10, 10}, chunks: {4, 4})
    assert {:ok, p, others} = Pipelines.build(a.metadata)
    assert p.chunk_spec.shape == {4, 4} and others == %{}
  end

  test "a rectilinear grid has the largest chunk's pipeline and one per other shape" do
    a = create(shape: {7, 4}, chunks: {[2, 5], [1, 3]})
    assert {:ok, p, others} = Pipelines.build(a.metadata)
    assert p.chunk_spec.shape == {5, 3}
    assert others |> Map.keys() |> Enum.sort() == [{2, 1}, {2, 3}, {5, 1}]
  end

  test "past 256 chunk shapes none is built in advance; each chunk reads at its shape" do
    edges = Enum.to_list(1..257)
    a = create(shape: {Enum.sum(edges)}, chunks: {edges})
    assert {:ok, %{chunk_spec: %{shape: {257}}}, others} = Pipelines.build(a.metadata)
    assert others == %{} and a.shape_pipelines == %{}
    # the chunk at 100 starts at 1 + ... + 100 = 5050 and holds 101 elements
    :ok = ExZarr.Array.write_chunk(a, {100}, :binary.copy(<<7>>, 101))
    assert ExZarr.Array.read_chunk(a, {100}) == {:ok, :binary.copy(<<7>>, 101)}
    assert ExZarr.Array.get_slice(a, start: {5049}, stop: {5052}) == {:ok, <<0, 7, 7>>}
  end

  test "inner chunks must divide every shard edge of a rectilinear grid" do
    a = create(shape: {8}, shards: {[4, 4]}, chunks: {2})
    assert {:ok, _, _} = Pipelines.build(a.metadata)

    assert {:error, {:invalid_codec_config, "sharding_indexed", detail}} =
             Pipelines.build(%{a.metadata | shape: {7}, chunks: {[4, 3]}})

    assert detail =~ "must divide every shard edge"
  end
end
