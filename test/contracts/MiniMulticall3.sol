// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// The part of Multicall3 that viem's call batching uses (aggregate3), plus two of its read helpers.
/// A fresh anvil has no Multicall3; tests put this runtime code at 0xcA11bde05977b3631167028862bE2a173976CA11.
contract MiniMulticall3 {
    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    function aggregate3(Call3[] calldata calls) external payable returns (Result[] memory results) {
        results = new Result[](calls.length);
        for (uint256 i; i < calls.length; ++i) {
            (bool ok, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(ok || calls[i].allowFailure, "Multicall3: call failed");
            results[i] = Result(ok, ret);
        }
    }

    function getEthBalance(address account) external view returns (uint256) {
        return account.balance;
    }

    function getBlockNumber() external view returns (uint256) {
        return block.number;
    }
}
